import CCrypto

/// Checks of credential files with OpenSSL's libcrypto, before a device is given one: a PKCS#12
/// identity must open with its password and hold a key and a certificate; a certificate must
/// parse as X.509, PEM or DER. The pointers stay inside these functions.
enum CredentialFiles {
    /// Why the PKCS#12 bytes do not open with `password`, or nil when they do.
    static func identityProblem(_ bytes: [UInt8], password: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { b -> String? in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            guard let p12 = d2i_PKCS12(nil, &p, b.count) else { return "not a PKCS#12 file" }
            defer { PKCS12_free(p12) }
            // The password as a C string, on the stack, cleared after use.
            return withUnsafeTemporaryAllocation(of: CChar.self, capacity: password.count + 1) { text -> String? in
                defer { text.update(repeating: 0) }
                for (i, byte) in password.enumerated() { text[i] = CChar(bitPattern: byte) }
                text[password.count] = 0
                var key: OpaquePointer?, certificate: OpaquePointer?
                guard PKCS12_parse(p12, text.baseAddress, &key, &certificate, nil) == 1 else { return "its password does not open it" }
                defer {
                    EVP_PKEY_free(key)
                    X509_free(certificate)
                }
                return key == nil || certificate == nil ? "it holds no key and certificate" : nil
            }
        }
    }

    /// The certificate's media type (`application/pem` or `application/pkcs1` for DER), or nil
    /// when the bytes are neither.
    static func certificateType(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { b -> String? in
            if let bio = BIO_new_mem_buf(b.baseAddress, Int32(b.count)) {
                defer { BIO_free(bio) }
                if let x = PEM_read_bio_X509(bio, nil, nil, nil) {
                    X509_free(x)
                    return "application/pem"
                }
            }
            var p: UnsafePointer<UInt8>? = b.baseAddress
            if let x = d2i_X509(nil, &p, b.count) {
                X509_free(x)
                return "application/pkcs1"
            }
            return nil
        }
    }
}
