#ifndef CLDAP_SHIM_H
#define CLDAP_SHIM_H
// Only the non-deprecated _ext API is used (ldap_initialize, ldap_sasl_bind_s, ldap_search_ext):
// LDAP_DEPRECATED stays unset on purpose.
#include <lber.h>
#include <ldap.h>
// ldap_init_fd: a session over a socket connected by the caller (bounded by poll).
#include <openldap.h>
#endif
