import AppConfigCore
import Foundation

/// A user table saved as it was read from an LDIF file, so that a later run whose directory file
/// has the same fingerprint, read with the same map, loads the table instead of parsing the file:
/// on a night whose directory export did not change, reading it was a third of the night. The
/// image is only ever a shortcut to what parsing those bytes gives: any mismatch (another
/// fingerprint, map or format, a damaged or short file) and the file is parsed as before.
///
/// ```
/// appconfig-users 5 <the header's bytes, 10 digits>
/// {"key": ..., "users": N, "live": L, "pool": BYTES, "masks": M, "segments": S, "keyHash": HEX, ...}<spaces to a multiple of 8>
/// <the values' bytes, zeros to a multiple of 8><the ranges, UInt32 each, 2 a user and column>
/// <the key hashes, UInt64 each, 2 a user: its DN's, its join key's (`UserKeyHashes`)><the lines, UInt32 each, 1 a user>
/// <M UInt32s: per user, the requested attributes its entry had (M is 0 or N)>
/// <S UInt32s: per segment of the file, its first line><S UInt64s: their XXH3-64s><S Int32s: the user each became, or -1>
/// ```
/// N counts the table's ids (`UserTable.slots`), L its users: where they differ (a night that read
/// only what changed kept the ids of users gone), the users are those the segments name, in their order.
/// The masks and the segments (`LDIFSegments`) let the night after read only what changed in
/// the file (`IncrementalDirectory`); an image without them is still a whole night's shortcut.
/// The key hashes let the night check its DNs and file its join index without reading the values;
/// `keyHash` is a probe's hash (`UserKeyHashes.probe`): an image of another hash is not read.
/// The numbers in the machine's byte order: an image is read where it was written. It is read
/// mapped (no copy: reading 213 MB into fresh memory was most of a 1M night's directory phase),
/// so the ranges start at a multiple of 8 for their UInt32s.
public enum UserTableImage {
    /// Bump when the LDIF reader would read the same bytes into another table, or the layout changes.
    static let file = ImageFile(kind: "appconfig-users", format: 5)

    /// What an image must have been made with: the directory file's fingerprint (`SIZE HASH`) and
    /// how the file is read (the variables kept, their attributes, the join attribute).
    public static func key(fingerprint: String, map: AttributeMap) -> String {
        var parts = [fingerprint, "join=" + map.joinAttribute.lowercased()]
        parts += map.sources.map { "\($0.key.rawValue)=\($0.value.joined(separator: ","))" }.sorted()
        parts.append("columns=" + map.columns.variables.map(\.rawValue).joined(separator: ","))
        return parts.joined(separator: "\n")
    }

    /// The image of `table` made with `key`, in pieces to write one after another, given to `body`
    /// in turns (each valid during its call; the last call's value returned); nil when the table
    /// cannot be saved: groups (read only for assignments) and problems with more than a place and
    /// a message.
    /// `sourceState`: the directory file's state (identity, size, times) when it was hashed for
    /// `key`, which `sourceFingerprint` compares with.
    /// `hashPiece`: the users whose key hashes are made at a time, where the table keeps none.
    public static func withPieces<R>(of table: UserTable, key: String, sourceState: String? = nil, hashPiece: Int = 1 << 16,
                                     _ body: ([ByteView]) throws(Problem) -> R) throws(Problem) -> R? {
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
        var header: [String: Any] = [
            "key": key, "source": table.source, "users": table.slots, "live": table.count, "pool": table.poolBytes.count + ImageFile.padding(table.poolBytes.count),
            "joinAttribute": table.joinAttribute, "attributeCounts": table.attributeCounts, "problems": problems,
        ]
        if let sourceState { header["sourceState"] = sourceState }
        let masks = table.attributeMasks ?? []
        let segments = table.segments
        header["masks"] = masks.count
        header["segments"] = segments?.segments.count ?? 0
        header["poolAtFullRead"] = table.poolAtFullRead ?? table.poolBytes.count
        header["keyHash"] = String(UserKeyHashes.probe, radix: 16)
        guard let head = file.head(header) else { return nil }
        let zeros = [UInt8](repeating: 0, count: ImageFile.padding(table.poolBytes.count))
        let (starts, hashes, owners) = (segments?.segments.startLines ?? [], segments?.segments.hashes ?? [], segments?.users ?? [])
        try head.withView { head throws(Problem) in
            try zeros.withView { zeros throws(Problem) in _ = try body([head, table.poolBytes, zeros, table.rangeBytes]) }
        }
        try withKeyHashes(of: table, piece: hashPiece) { hashes throws(Problem) in _ = try body([hashes.bytes]) }
        return try table.lines.withView { lines throws(Problem) in
            try masks.withView { masks throws(Problem) in
                try starts.withView { starts throws(Problem) in
                    try hashes.withView { hashes throws(Problem) in
                        try owners.withView { owners throws(Problem) in
                            try body([lines.bytes, masks.bytes, starts.bytes, hashes.bytes, owners.bytes])
                        }
                    }
                }
            }
        }
    }

    /// The table's key hashes, in pieces given to `body` in turn: those it keeps, or made from its
    /// values a piece at a time (a whole read's, written beside its publish: made whole, they would
    /// add 16 bytes a user to the job's peak).
    private static func withKeyHashes(of table: UserTable, piece: Int, _ body: (BufferView<UInt64>) throws(Problem) -> Void) throws(Problem) {
        if let kept = table.keyHashes { return try body(kept.pairs) }
        let piece = max(1, piece)
        var pairs = [UInt64](repeating: 0, count: 2 * min(piece, table.slots))
        for first in Swift.stride(from: 0, to: table.slots, by: piece) {
            let users = first..<min(first + piece, table.slots)
            pairs.withWorkerSlots { UserKeyHashes.make(table, users: users, into: $0) }
            try pairs.withView { pairs throws(Problem) in try body(pairs[view: 0..<(2 * users.count)]) }
        }
    }

    /// The table the image at `path` holds, when it was made with `key` (nil otherwise, or when
    /// it cannot be read whole). `source`: tonight's name of the directory file, which the
    /// table's problems and messages give.
    public static func load(_ path: String, key: String, source: String, columns: UserColumns) -> UserTable? {
        try? read(path, key: { key }, source: source, columns: columns)
    }

    /// The fingerprint of the directory file an image was made from (its key's first line), when
    /// the image recorded that file's state and it is `state`: the same file, unchanged since it was
    /// hashed (its status-change time moves with any write), need not be hashed again. Reads the
    /// header only.
    public static func sourceFingerprint(_ path: String, state: String) -> String? {
        guard let header = header(of: path), header["sourceState"] as? String == state else { return nil }
        return fingerprint(header)
    }

    /// The fingerprint of the directory file an image was made from (its key's first line),
    /// read from the header only: a file of another size is not that file, whatever its hash.
    public static func madeFrom(_ path: String) -> String? { header(of: path).flatMap(fingerprint) }

    /// An image's header fields, read without the rest of the file.
    private static func header(of path: String) -> [String: Any]? { file.header(ofFile: path) }

    /// The first line of a header's key: the directory file's fingerprint.
    private static func fingerprint(_ header: [String: Any]) -> String? {
        guard let key = header["key"] as? String, let fingerprint = key.split(separator: "\n", maxSplits: 1).first, !fingerprint.isEmpty else { return nil }
        return String(fingerprint)
    }

    /// `load`, with the key asked for only once the image is read (and checked last): a night
    /// hashes its directory file while the image is read, and takes the longer of the two.
    public static func load(_ path: String, keyOnceRead key: () -> String, source: String, columns: UserColumns) -> UserTable? {
        try? read(path, key: key, source: source, columns: columns)
    }

    private static func read(_ path: String, key: () -> String, source: String, columns: UserColumns) throws(FileReadError) -> UserTable? {
        guard let image = try contents(path, source: source, columns: columns) else { return nil }
        // The table (its join index) made before the key is asked for: while the directory file is still hashed.
        let table = image.table()
        guard image.key == key(), image.mapping.change() == nil else { return nil }
        return table
    }

    /// What an image holds, read where it lies in its mapping (valid while `mapping` is).
    package struct Contents {
        package let key: String
        package let mapping: MappedFile
        let source: String
        let columns: UserColumns
        let pool: ByteView
        let ranges: BufferView<UInt32>
        let lines: BufferView<UInt32>
        let problems: [Problem]
        let joinAttribute: String
        let attributeCounts: [String: Int]
        /// Per user (empty when not kept).
        let masks: BufferView<UInt32>
        /// The file's segments and the user each became (nil when not kept).
        let segments: (segments: LDIFSegments, users: BufferView<UInt32>)?
        let poolAtFullRead: Int
        let keyHashes: UserKeyHashes
        /// The users' ids in file order, where not every id is a user's (`UserTable.order`).
        let order: [Int32]?
        /// The ranges' own mapping of the file (`contents(writable:)`), where rows are added after
        /// them (`rangesAppending`); nil: they lie in `mapping`.
        let rangesMapping: MappedFile?

        /// The table's ids (`UserTable.slots`).
        var users: Int { lines.count }

        /// The pool where it lies in the mapping, to append to.
        var mappedPool: MappedPool { MappedPool(mapping: mapping, pool: pool) }

        /// The ranges with `more` rows after them, in place in their own mapping (written privately
        /// over the key hashes there, which `mapping` still has), nil when they do not fit there or
        /// the ranges have no mapping of their own. Not a copy: at 10M users the ranges are 576 MB
        /// of a night's fresh pages, a fifth of its directory phase.
        func rangesAppending(_ more: BufferView<UInt32>) -> BufferView<UInt32>? {
            guard let rangesMapping, let extended = MappedPool(mapping: rangesMapping, pool: ranges.bytes).extended(with: more.bytes) else { return nil }
            return BufferView<UInt32>(extended, at: 0, count: ranges.count + more.count)
        }

        /// The table the image holds.
        func table() -> UserTable {
            let table = UserTable(source: source, columns: columns, pool: pool, ranges: ranges, owners: rangesMapping.map { [$0] } ?? [], mapping: mapping,
                                  lines: Array(lines), problems: problems, keyHashes: keyHashes, order: order)
            table.joinAttribute = joinAttribute
            table.attributeCounts = attributeCounts
            if masks.count == users { table.attributeMasks = Array(masks) }
            if let segments { table.segments = (segments.segments, segments.users.map { Int32(bitPattern: $0) }) }
            table.poolAtFullRead = poolAtFullRead
            return table
        }
    }

    /// The image at `path`, read (nil when it is not one this program wrote whole). `writable`:
    /// mapped so that its bytes after the pool may be written over (privately: the file does
    /// not change), for values appended to the pool in place (`IncrementalDirectory`), and its
    /// ranges mapped again on their own, for rows appended after them (`rangesAppending`).
    package static func contents(_ path: String, source: String, columns: UserColumns, writable: Bool = false) throws(FileReadError) -> Contents? {
        guard let mapped = try MappedFile(path, limit: .max, readOnly: !writable) else { return nil }
        let rangesMapping = writable ? try MappedFile(path, limit: .max) : nil
        let bytes = mapped.view
        guard let (header, start) = file.header(bytes),
              let imageKey = header["key"] as? String,
              let users = header["users"] as? Int, let pool = header["pool"] as? Int, let oldSource = header["source"] as? String,
              let joinAttribute = header["joinAttribute"] as? String, let counts = header["attributeCounts"] as? [String: Int],
              let problemObjects = header["problems"] as? [[String: Any]],
              let maskCount = header["masks"] as? Int, let segmentCount = header["segments"] as? Int,
              let poolAtFullRead = header["poolAtFullRead"] as? Int, header["keyHash"] as? String == String(UserKeyHashes.probe, radix: 16),
              let live = header["live"] as? Int,
              users >= 0, pool >= 0, maskCount == 0 || maskCount == users, segmentCount >= 0, case let ranges = users * 2 * columns.stride,
              live >= 0, live <= users, live == users || segmentCount > 0,
              bytes.count == start + pool + 4 * ranges + 16 * users + 4 * users + 4 * maskCount + 16 * segmentCount
        else { return nil }
        // Every page read now, in one call a mapping (a fault per page later), each page in one mapping only.
        let rangesOffset = start + pool
        if writable {
            if let rangesMapping {
                mapped.populateForReading(0..<rangesOffset)
                mapped.populateForReading((rangesOffset + 4 * ranges)..<bytes.count)
                rangesMapping.populateForReading(rangesOffset..<(rangesOffset + 4 * ranges))
            } else {
                mapped.populateForReading()
            }
        }
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
        var at = start + pool + 4 * ranges + 16 * users
        guard let rangeView = BufferView<UInt32>(rangesMapping?.view ?? bytes, at: rangesOffset, count: ranges),
              let keyHashes = BufferView<UInt64>(bytes, at: start + pool + 4 * ranges, count: 2 * users),
              let lineView = BufferView<UInt32>(bytes, at: at, count: users),
              let maskView = BufferView<UInt32>(bytes, at: at + 4 * users, count: maskCount) else { return nil }
        at += 4 * users + 4 * maskCount
        var segments: (LDIFSegments, BufferView<UInt32>)?
        if segmentCount > 0 {
            guard let starts = BufferView<UInt32>(bytes, at: at, count: segmentCount),
                  let owners = BufferView<UInt32>(bytes, at: at + 12 * segmentCount, count: segmentCount) else { return nil }
            let hashes = (0..<segmentCount).map { bytes.loadUnaligned(fromByteOffset: at + 4 * segmentCount + 8 * $0, as: UInt64.self) }
            // Every user a segment names is one of the table's.
            guard owners.allSatisfy({ Int32(bitPattern: $0) >= -1 && Int32(bitPattern: $0) < Int32(clamping: users) }) else { return nil }
            segments = (LDIFSegments(startLines: Array(starts), hashes: hashes), owners)
        }
        // Not every id a user's: the users are those the segments name, in their order.
        var order: [Int32]?
        if live != users, let owners = segments?.1 {
            var named: [Int32] = []
            named.reserveCapacity(live)
            for owner in owners where Int32(bitPattern: owner) >= 0 { named.append(Int32(bitPattern: owner)) }
            guard named.count == live else { return nil }
            order = named
        }
        // Every offset within the values: a damaged image is refused here, not read out of bounds.
        // In parts on every core (8M offsets at 1M users: a night's directory phase waited on one).
        let outside = anyRange(ranges / 2, parallelFrom: 1 << 16) { _, pairs in
            pairs.contains { i in rangeView[2 * i + 1] != .max && Int(rangeView[2 * i]) + Int(rangeView[2 * i + 1]) > pool }
        }
        guard !outside else { return nil }
        return Contents(key: imageKey, mapping: mapped, source: source, columns: columns, pool: bytes[view: start..<(start + pool)], ranges: rangeView,
                        lines: lineView, problems: problems, joinAttribute: joinAttribute, attributeCounts: counts, masks: maskView,
                        segments: segments, poolAtFullRead: poolAtFullRead, keyHashes: UserKeyHashes(pairs: keyHashes), order: order,
                        rangesMapping: rangesMapping)
    }

}
