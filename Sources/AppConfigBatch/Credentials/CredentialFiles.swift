import AppConfigCore
import CCrypto

/// Checks of credential files with OpenSSL's libcrypto, before a device is given one: a PKCS#12
/// identity must open with its password and hold a key and a certificate; a certificate must
/// parse as X.509, PEM or DER. The pointers stay inside these functions.
enum CredentialFiles {
    /// Why the PKCS#12 bytes do not open with `password`, or nil when they do.
    static func identityProblem(_ bytes: [UInt8], password: [UInt8]) -> String? {
        // OpenSSL reads the password as a C string: one with a NUL would open the file with its
        // head while the device is given all of it.
        if password.contains(0) { return "its password holds a NUL, which no PKCS#12 password can" }
        return bytes.withUnsafeBufferPointer { b -> String? in
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

    /// A certificate file's one certificate, re-encoded from its parse (PEM in, PEM out; DER in,
    /// DER out): what a device gets is exactly that certificate, never the file's other bytes (a
    /// private key or a password beside it). A file holding anything else, or more than one
    /// certificate, is refused.
    struct Certificate {
        var document: [UInt8]
        /// `application/pem`, or `application/pkcs1` for DER.
        var contentType: String
        /// Its notAfter is in the past.
        var expired: Bool
    }

    static let pemBegin = Array("-----BEGIN ".utf8), pemEnd = Array("-----END ".utf8), dashes = Array("-----".utf8)

    /// The certificate, or why the bytes are not one certificate.
    static func certificate(_ bytes: [UInt8]) -> Result<Certificate, Refused> {
        if bytes.firstRange(of: pemBegin) != nil {
            // Every block a CERTIFICATE, nothing but white space between them.
            var blocks: [Range<Int>] = []
            var i = 0
            while i < bytes.count {
                if [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1; continue }
                guard bytes[i...].starts(with: pemBegin) else { return .failure(Refused("it holds text beside its certificate (a password, a comment): only a certificate is delivered")) }
                guard let labelEnd = bytes[(i + pemBegin.count)...].firstRange(of: dashes)?.lowerBound else { return .failure(Refused("a PEM block without its label's end")) }
                let label = String(decoding: bytes[(i + pemBegin.count)..<labelEnd], as: UTF8.self)
                guard label == "CERTIFICATE" else { return .failure(Refused("it holds a \(Problem.printable(label)) block: only a certificate is delivered")) }
                guard let end = bytes[labelEnd...].firstRange(of: pemEnd + Array("CERTIFICATE-----".utf8)) else { return .failure(Refused("a PEM block without its END line")) }
                blocks.append(i..<end.upperBound)
                i = end.upperBound
            }
            guard blocks.count == 1 else { return .failure(Refused("it holds \(blocks.count) certificates: a credential certificate is one certificate (give each its own)")) }
            let block = Array(bytes[blocks[0]])
            return block.withUnsafeBufferPointer { b -> Result<Certificate, Refused> in
                guard let bio = BIO_new_mem_buf(b.baseAddress, Int32(b.count)) else { return .failure(Refused("out of memory")) }
                defer { BIO_free(bio) }
                guard let x = PEM_read_bio_X509(bio, nil, nil, nil) else { return .failure(Refused("its PEM block is not an X.509 certificate")) }
                defer { X509_free(x) }
                guard let out = BIO_new(BIO_s_mem()) else { return .failure(Refused("out of memory")) }
                defer { BIO_free(out) }
                guard PEM_write_bio_X509(out, x) == 1 else { return .failure(Refused("the certificate cannot be written as PEM")) }
                var data: UnsafeMutablePointer<CChar>?
                let n = BIO_ctrl(out, BIO_CTRL_INFO, 0, &data)
                guard n > 0, let data else { return .failure(Refused("the certificate cannot be written as PEM")) }
                let pem = Array(UnsafeRawBufferPointer(start: data, count: n).bindMemory(to: UInt8.self))
                return .success(Certificate(document: pem, contentType: "application/pem", expired: isExpired(x)))
            }
        }
        return bytes.withUnsafeBufferPointer { b -> Result<Certificate, Refused> in
            var p: UnsafePointer<UInt8>? = b.baseAddress
            guard let x = d2i_X509(nil, &p, b.count) else { return .failure(Refused("not an X.509 certificate (PEM or DER)")) }
            defer { X509_free(x) }
            guard let p, p == b.baseAddress! + b.count else { return .failure(Refused("it holds bytes after its certificate: only a certificate is delivered")) }
            var out: UnsafeMutablePointer<UInt8>?
            let n = i2d_X509(x, &out)
            guard n > 0, let out else { return .failure(Refused("the certificate cannot be written as DER")) }
            defer { CRYPTO_free(out, #file, #line) }
            return .success(Certificate(document: Array(UnsafeBufferPointer(start: out, count: Int(n))), contentType: "application/pkcs1", expired: isExpired(x)))
        }
    }

    private static func isExpired(_ x: OpaquePointer) -> Bool {
        guard let notAfter = X509_get0_notAfter(x) else { return false }
        return X509_cmp_current_time(notAfter) < 0
    }

    /// Why a credential file was refused (never its bytes).
    struct Refused: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }
}
