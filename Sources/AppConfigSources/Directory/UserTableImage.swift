import AppConfigCore
import Foundation

/// A user table saved as it was read from an LDIF file, so that a later run whose directory file
/// has the same fingerprint, read with the same map, loads the table instead of parsing the file:
/// on a night whose directory export did not change, reading it was a third of the night. The
/// image is only ever a shortcut to what parsing those bytes gives: any mismatch (another
/// fingerprint, map or format, a damaged or short file) and the file is parsed as before.
///
/// ```
/// appconfig-users 1 <the header's bytes, 10 digits>
/// {"key": ..., "users": N, "pool": BYTES, ...}
/// <the values' bytes><the ranges, UInt32 each, 2 a user and column><the lines, UInt32 each, 1 a user>
/// ```
/// The numbers in the machine's byte order: an image is read where it was written.
public enum UserTableImage {
    /// Bump when the LDIF reader would read the same bytes into another table.
    static let format = 1
    static var magic: String { "appconfig-users \(format) " }
    /// The first line's bytes: `magic` and the header's length, ten digits, a line break.
    static var firstLine: Int { magic.utf8.count + 11 }

    /// What an image must have been made with: the directory file's fingerprint (`SIZE HASH`) and
    /// how the file is read (the variables kept, their attributes, the join attribute).
    public static func key(fingerprint: String, map: AttributeMap) -> String {
        var parts = [fingerprint, "join=" + map.joinAttribute.lowercased()]
        parts += map.sources.map { "\($0.key.rawValue)=\($0.value.joined(separator: ","))" }.sorted()
        parts.append("columns=" + map.columns.variables.map(\.rawValue).joined(separator: ","))
        return parts.joined(separator: "\n")
    }

    /// The image of `table` made with `key`, in pieces to write one after another (valid during
    /// `body`); nil when the table cannot be saved: groups (read only for assignments) and
    /// problems with more than a place and a message.
    public static func withPieces<R>(of table: UserTable, key: String, _ body: ([ByteView]) throws(Problem) -> R) throws(Problem) -> R? {
        guard table.groups == nil, !table.lines.isEmpty || table.count == 0,
              table.readProblems.allSatisfy({ $0.variable == nil && $0.value == nil && $0.location.row == nil && $0.location.device == nil && $0.location.key == nil })
        else { return nil }
        let problems: [[String: Any]] = table.readProblems.map { p in
            var o: [String: Any] = ["code": p.code.rawValue, "severity": p.severity.rawValue, "line": p.location.line,
                                    "column": p.location.column, "message": p.message]
            if let dn = p.location.dn { o["dn"] = dn }
            if let hint = p.hint { o["hint"] = hint }
            return o
        }
        let header: [String: Any] = [
            "key": key, "source": table.source, "users": table.count, "pool": table.poolBytes.count,
            "joinAttribute": table.joinAttribute, "attributeCounts": table.attributeCounts, "problems": problems,
        ]
        guard let json = try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys]) else { return nil }
        let length = String(json.count + 1)
        guard length.count <= 10 else { return nil }
        let head = Array((magic + String(repeating: "0", count: 10 - length.count) + length + "\n").utf8) + Array(json) + [0x0A]
        let lines = table.lines.withUnsafeBytes { Array($0) }  // a copy: four bytes a user
        return try head.withView { head throws(Problem) in
            try lines.withView { lines throws(Problem) in try body([head, table.poolBytes, table.rangeBytes, lines]) }
        }
    }

    /// The table the image at `path` holds, when it was made with `key` (nil otherwise, or when
    /// it cannot be read whole). `source`: tonight's name of the directory file, which the
    /// table's problems and messages give.
    public static func load(_ path: String, key: String, source: String, columns: UserColumns) -> UserTable? {
        try? read(path, key: key, source: source, columns: columns)
    }

    private static func read(_ path: String, key: String, source: String, columns: UserColumns) throws(FileReadError) -> UserTable? {
        let file = try FileSections(path)
        let magic = Array(magic.utf8)
        guard let first = try file.bytes(at: 0, count: firstLine), first.starts(with: magic), first.last == 0x0A,
              let length = Int(String(decoding: first[magic.count..<(firstLine - 1)], as: UTF8.self)),
              let json = try file.bytes(at: firstLine, count: length),
              let header = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any],
              header["key"] as? String == key,
              let users = header["users"] as? Int, let pool = header["pool"] as? Int, let oldSource = header["source"] as? String,
              let joinAttribute = header["joinAttribute"] as? String, let counts = header["attributeCounts"] as? [String: Int],
              let problemObjects = header["problems"] as? [[String: Any]],
              users >= 0, pool >= 0, case let ranges = users * 2 * columns.stride,
              file.size == firstLine + length + pool + 4 * ranges + 4 * users
        else { return nil }
        var problems: [Problem] = []
        for o in problemObjects {
            guard let code = o["code"] as? String, let severity = (o["severity"] as? String).flatMap(Problem.Severity.init(rawValue:)),
                  let line = o["line"] as? Int, let column = o["column"] as? Int, let message = o["message"] as? String else { return nil }
            // Messages name the file as it was read then: tonight's name in its place.
            var p = Problem(SourceCode.ldifSyntax, severity, at: Location(file: source, line: line, column: column, dn: o["dn"] as? String),
                            message.replacingOccurrences(of: oldSource, with: source), hint: o["hint"] as? String)
            p.code = ProblemCode(rawValue: code)
            problems.append(p)
        }
        let start = firstLine + length
        let valueBuffer = GrowingBuffer<UInt8>(capacity: max(pool, 1)), rangeBuffer = GrowingBuffer<UInt32>(capacity: max(ranges, 1))
        let lineBuffer = GrowingBuffer<UInt32>(capacity: max(users, 1))
        guard try file.append(at: start, byteCount: pool, to: valueBuffer),
              try file.append(at: start + pool, byteCount: 4 * ranges, to: rangeBuffer),
              try file.append(at: start + pool + 4 * ranges, byteCount: 4 * users, to: lineBuffer) else { return nil }
        let lines = Array(lineBuffer.view)
        // Every offset within the values: a damaged image is refused here, not read out of bounds.
        let rangeView = rangeBuffer.view
        for i in stride(from: 0, to: ranges, by: 2) where rangeView[i + 1] != .max {
            guard Int(rangeView[i]) + Int(rangeView[i + 1]) <= pool else { return nil }
        }
        let table = UserTable(source: source, columns: columns, pool: valueBuffer, ranges: rangeBuffer, lines: lines, problems: problems)
        table.joinAttribute = joinAttribute
        table.attributeCounts = counts
        return table
    }
}
