import AppConfigSpec

/// LDIF content records (RFC 2849) into a user table: `version:`, comments, folded lines, base64
/// `::` values. Change records and `:<` URL values are refused, entry by entry, with the line.
/// As the LDAP default filter `(objectClass=person)` does, only people are users: entries whose
/// objectClass is person or one of its kinds (organizationalPerson, inetOrgPerson, user), or that
/// name no objectClass at all; domains, OUs and groups are passed over.
public enum LDIFReader {
    static let personClasses: Set<String> = ["person", "organizationalperson", "inetorgperson", "user"]

    public static func load(_ path: String, map: AttributeMap = AttributeMap()) throws -> UserTable {
        let bytes: [UInt8]
        do { bytes = try readFileBytes(path, limit: Int(UInt32.max)) } catch { throw SourceError("\(error)") }
        return read(bytes, file: path, map: map)
    }

    public static func read(_ bytes: [UInt8], file: String, map: AttributeMap = AttributeMap()) -> UserTable {
        var builder = UserTableBuilder(source: file, map: map)
        let order = builder.attributeOrder
        let position = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        var seenDNs = Set<String>()

        var entryLine = 0
        var dn: String?
        var values = [[UInt8]?](repeating: nil, count: order.count)
        var rejected = false
        var sawObjectClass = false, isPerson = false

        func finishEntry() {
            defer {
                dn = nil; rejected = false; sawObjectClass = false; isPerson = false
                values = [[UInt8]?](repeating: nil, count: order.count)
            }
            guard let dn, !rejected, isPerson || !sawObjectClass else { return }
            let location = "\(file):\(entryLine)"
            if !seenDNs.insert(dn.lowercased()).inserted {
                builder.report(SourceProblem(.ldifDuplicateDN, at: location, "DN \"\(dn)\" appears again; this entry is skipped"))
                return
            }
            builder.add(dn: dn, values: values, location: location)
        }

        func problem(_ code: SourceProblem.Code, _ line: Int, _ message: String) {
            builder.report(SourceProblem(code, at: "\(file):\(line)", message))
            rejected = true
        }

        var lines = LogicalLines(bytes: bytes)
        var first = true
        while let (line, number) = lines.next() {
            if line.isEmpty { finishEntry(); continue }
            if line.first == UInt8(ascii: "#") { continue }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                problem(.ldifSyntax, number, "expected \"attribute: value\"")
                continue
            }
            let name = String(decoding: line[..<colon], as: UTF8.self)
            let lower = name.lowercased()
            // The value: ": text", ":: base64" or ":< URL".
            var rest = line[(colon + 1)...]
            var value: [UInt8]
            if rest.first == UInt8(ascii: ":") {
                rest = rest.dropFirst().drop { $0 == 0x20 }
                guard let decoded = Base64.decode(rest) else {
                    problem(.ldifBase64, number, "the base64 value of \(name) is not valid base64")
                    continue
                }
                value = decoded
            } else if rest.first == UInt8(ascii: "<") {
                problem(.ldifURLValue, number, "\(name) takes its value from a URL (\":<\"), which is not supported")
                continue
            } else {
                value = Array(rest.drop { $0 == 0x20 })
            }
            if first && lower == "version" { first = false; continue }
            first = false
            if dn == nil {
                guard lower == "dn" else {
                    if !rejected { problem(.ldifSyntax, number, "an entry starts with \"dn:\", not \"\(name):\"") }
                    continue
                }
                entryLine = number
                guard let text = String(validating: value, as: UTF8.self) else {
                    problem(.ldifInvalidUTF8, number, "the DN is not valid UTF-8")
                    dn = ""
                    continue
                }
                dn = text
                continue
            }
            if lower == "changetype" {
                problem(.ldifChangeRecord, number, "change records (changetype: \(String(decoding: value, as: UTF8.self))) are not supported; give the directory's content")
                continue
            }
            if lower == "objectclass" {
                sawObjectClass = true
                if personClasses.contains(String(decoding: value, as: UTF8.self).lowercased()) { isPerson = true }
                continue
            }
            let attribute = lower.split(separator: ";", maxSplits: 1).first.map(String.init) ?? lower
            guard let i = position[attribute] else { continue }
            if values[i] != nil { continue }  // multi-valued: the first value is kept
            if String(validating: value, as: UTF8.self) == nil {
                problem(.ldifInvalidUTF8, number, "the value of \(name) is not valid UTF-8")
                continue
            }
            values[i] = value
        }
        finishEntry()
        return builder.finish()
    }
}

/// LDIF's lines with folding undone (a line starting with one space continues the previous one),
/// CRLF or LF, each with the number of its first physical line.
struct LogicalLines {
    let bytes: [UInt8]
    var position = 0
    var line = 0

    mutating func next() -> ([UInt8], Int)? {
        guard position < bytes.count else { return nil }
        var out = physical()
        let number = line
        while position < bytes.count && bytes[position] == 0x20 {
            position += 1  // the fold's space
            out += physical()
        }
        return (out, number)
    }

    private mutating func physical() -> [UInt8] {
        line += 1
        let start = position
        while position < bytes.count && bytes[position] != 0x0A { position += 1 }
        var end = position
        if end > start && bytes[end - 1] == 0x0D { end -= 1 }
        if position < bytes.count { position += 1 }
        return Array(bytes[start..<end])
    }
}

/// Standard base64 (RFC 4648) without line breaks, as LDIF writes it.
enum Base64 {
    static func decode<S: Collection>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        var padding = 0
        for c in text {
            let v: UInt32
            switch c {
            case 0x41...0x5A: v = UInt32(c - 0x41)
            case 0x61...0x7A: v = UInt32(c - 0x61 + 26)
            case 0x30...0x39: v = UInt32(c - 0x30 + 52)
            case UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="): padding += 1; continue
            case 0x20, 0x0D, 0x0A: continue
            default: return nil
            }
            if padding > 0 { return nil }
            buffer = buffer << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        guard padding <= 2, bits < 6 else { return nil }
        return out
    }
}
