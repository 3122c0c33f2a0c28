import CPlist
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A property list value as libplist decodes it. Dictionaries keep libplist's key order.
public indirect enum PlistValue: Equatable, Sendable {
    case string(String)
    /// libplist 2.2 stores every integer as an unsigned 64-bit value; negatives come back as their
    /// two's-complement bit pattern, which is what `Int64(bitPattern:)` undoes.
    case integer(Int64)
    case real(Double)
    case boolean(Bool)
    /// Seconds since 2001-01-01T00:00:00Z. libplist 2.2 reads dates as int32 seconds and a
    /// microsecond part whose sign it drops: a date before 2001 with a fraction reads wrong, and
    /// dates beyond 1933...2069 overflow.
    case date(Double)
    case data([UInt8])
    case array([PlistValue])
    case dictionary([(key: String, value: PlistValue)])
    case uid(UInt64)

    public static func == (a: PlistValue, b: PlistValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.real(let x), .real(let y)): x == y || (x.isNaN && y.isNaN)
        case (.boolean(let x), .boolean(let y)): x == y
        case (.date(let x), .date(let y)): x == y
        case (.data(let x), .data(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.dictionary(let x), .dictionary(let y)):
            x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.uid(let x), .uid(let y)): x == y
        default: false
        }
    }

    /// The value under `key`, for a dictionary.
    public subscript(key: String) -> PlistValue? {
        guard case .dictionary(let pairs) = self else { return nil }
        return pairs.first { $0.key == key }?.value
    }
}

/// Decodes binary or XML property lists with libplist. libplist reports no reason for a failure,
/// only that the tree is empty, so the error says what was tried.
public enum LibPlist {
    public struct DecodeError: Error, Equatable, Sendable {
        public var message: String
    }

    /// Deeper files are refused before libplist parses them (see `PlistPrecheck`).
    public static let maxDepth = 512

    /// `prechecked`: false only for bytes this process made itself (its own renderer's output),
    /// which need no guard against what crashes libplist.
    public static func decode(_ bytes: [UInt8], prechecked: Bool = true) throws(DecodeError) -> PlistValue {
        guard !bytes.isEmpty else { throw DecodeError(message: "empty file") }
        guard bytes.count < Int(UInt32.max) else { throw DecodeError(message: "file too large for libplist") }
        switch prechecked ? PlistPrecheck.check(bytes, limit: maxDepth) : .fine {
        case .fine: break
        case .tooDeep: throw DecodeError(message: "nesting deeper than \(maxDepth) levels")
        case .cycle: throw DecodeError(message: "a container of this binary plist contains itself")
        case .loneSurrogate: throw DecodeError(message: "a string holds a lone UTF-16 surrogate")
        case .nulCharacter: throw DecodeError(message: "a string or key holds a NUL character")
        case .malformedTrailer: throw DecodeError(message: "libplist could not decode this binary plist: its trailer does not describe its object table")
        case .integerOutOfRange(let text): throw DecodeError(message: "integer \(text) is out of range for a 64-bit integer")
        case .dateOutOfRange(let text):
            throw DecodeError(message: "date \(text) is outside the dates a plist keeps exactly (\(PlistPrecheck.dateRangeText))")
        case .notANumber: throw DecodeError(message: "a real is NaN, which no key can take (it would pass every constraint)")
        }
        var root: plist_t? = nil
        bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                plist_from_memory(chars.baseAddress, UInt32(chars.count), &root)
            }
        }
        guard let root else {
            let binary = bytes.starts(with: Array("bplist00".utf8))
            throw DecodeError(message: binary ? "libplist could not decode this binary plist"
                                              : "libplist could not decode this XML plist")
        }
        defer { plist_free(root) }
        return try value(of: root, depth: 0)
    }

    /// Whether libplist sees a binary plist (as opposed to XML).
    public static func isBinary(_ bytes: [UInt8]) -> Bool { bytes.starts(with: Array("bplist00".utf8)) }

    private static func value(of node: plist_t, depth: Int) throws(DecodeError) -> PlistValue {
        guard depth < maxDepth else { throw DecodeError(message: "nesting deeper than \(maxDepth) levels") }
        switch plist_get_node_type(node) {
        case PLIST_BOOLEAN:
            var b: UInt8 = 0
            plist_get_bool_val(node, &b)
            return .boolean(b != 0)
        case PLIST_UINT:
            var u: UInt64 = 0
            plist_get_uint_val(node, &u)
            return .integer(Int64(bitPattern: u))
        case PLIST_REAL:
            var d = 0.0
            plist_get_real_val(node, &d)
            return .real(d)
        case PLIST_STRING, PLIST_KEY:
            var s: UnsafeMutablePointer<CChar>? = nil
            if plist_get_node_type(node) == PLIST_KEY { plist_get_key_val(node, &s) } else { plist_get_string_val(node, &s) }
            defer { free(s) }
            // libplist writes a lone surrogate (`&#xD800;`, or unpaired in a binary UTF-16 string)
            // as bytes that are not UTF-8; repairing them to U+FFFD would change the value silently.
            guard let s else { return .string("") }
            guard let text = String(validatingCString: s) else {
                throw DecodeError(message: "a string holds a lone UTF-16 surrogate or bytes that are not UTF-8")
            }
            return .string(text)
        case PLIST_DATE:
            var sec: Int32 = 0, usec: Int32 = 0
            plist_get_date_val(node, &sec, &usec)
            return .date(Double(sec) + Double(usec) / 1_000_000)
        case PLIST_DATA:
            var p: UnsafeMutablePointer<CChar>? = nil
            var n: UInt64 = 0
            plist_get_data_val(node, &p, &n)
            defer { free(p) }
            guard let p else { return .data([]) }
            return .data(p.withMemoryRebound(to: UInt8.self, capacity: Int(n)) { Array(UnsafeBufferPointer(start: $0, count: Int(n))) })
        case PLIST_ARRAY:
            var items: [PlistValue] = []
            for i in 0..<plist_array_get_size(node) {
                guard let item = plist_array_get_item(node, i) else { continue }
                items.append(try value(of: item, depth: depth + 1))
            }
            return .array(items)
        case PLIST_DICT:
            var pairs: [(key: String, value: PlistValue)] = []
            var iter: plist_dict_iter? = nil
            plist_dict_new_iter(node, &iter)
            defer { free(iter) }
            while true {
                var key: UnsafeMutablePointer<CChar>? = nil
                var item: plist_t? = nil
                plist_dict_next_item(node, iter, &key, &item)
                guard let key, let item else { free(key); break }
                let name = String(validatingCString: key)
                free(key)
                guard let name else { throw DecodeError(message: "a key holds a lone UTF-16 surrogate or bytes that are not UTF-8") }
                do {
                    pairs.append((name, try value(of: item, depth: depth + 1)))
                } catch {
                    throw DecodeError(message: depth == 0 ? "\"\(name)\": \(error.message)" : error.message)
                }
            }
            return .dictionary(pairs)
        case PLIST_UID:
            var u: UInt64 = 0
            plist_get_uid_val(node, &u)
            return .uid(u)
        default:
            throw DecodeError(message: "unsupported plist node type")
        }
    }
}
