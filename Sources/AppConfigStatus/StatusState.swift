import AppConfigCore
import AppConfigOutput
import AppConfigPush
import AppConfigSpec

/// The fold kept between runs (`SOURCE.status-state`): every enrollment's `DeviceReport`.
///
/// Version 2, written since: a text line naming it, then a record per enrollment (a 32-bit length,
/// the enrollment as a packed string, then its report as the fold packs it: `PackedReport`), then
/// an end mark with the number of records, so that a file cut short is told from a whole one. Binary because
/// the benchmark says so: the JSON lines of version 1 were 880 MB at 1M devices and their making
/// a sixth of a status run (`Status.1000kEvents.foldAndJoin`, perf); these are half the bytes and
/// made without escaping. Version 1 (a JSON line per enrollment) is still read.
enum StatusState {
    static let magic = Array("appconfig-status-state 2\n".utf8)
    /// The end mark's length field: no record is that long.
    static let endMark: UInt32 = 0xFFFF_FFFF

    static func read(_ path: String) throws(Problem) -> StatusFold {
        guard access(path, F_OK) == 0 else { return StatusFold() }
        let bytes: [UInt8]
        do { bytes = try readFileBytes(path, limit: 64 << 30) } catch { throw Problem(StatusCode.state, at: Location(file: path), error.problem.message) }
        if bytes.starts(with: magic) { return try readVersion2(bytes, path: path) }
        if bytes.starts(with: StatusStateVersion1.header.dropLast()) { return try StatusStateVersion1.read(bytes, path: path) }
        throw Problem(StatusCode.state, at: Location(file: path, line: 1), "\(path) is not a state file appconfig status wrote")
    }

    static func write(_ fold: StatusFold, to path: String) throws(Problem) {
        // In the order of the enrollments' FNV-1a hashes (the same every run: sorting 1M strings
        // was a second of cache misses), each reached by its position in the table (a lookup was
        // a hash, a cache miss and a copy of the report each). Records are made on every core a
        // window of chunks at a time and written in order: the file is never all held at once.
        let devices = fold.packed
        var order: [(hash: UInt64, at: Dictionary<String, PackedReport>.Index)] = []
        order.reserveCapacity(devices.count)
        for at in devices.indices {
            var key = devices.keys[at]
            order.append((key.withUTF8 { fnv1a(ByteView($0)) }, at))
        }
        order.sort { $0.hash != $1.hash ? $0.hash < $1.hash : devices.keys[$0.at] < devices.keys[$1.at] }
        let sorted = order
        let chunk = 4096, window = 16
        let chunks = (order.count + chunk - 1) / chunk
        let file: AtomicFile
        do { file = try AtomicFile(path: path) } catch { throw Problem(StatusCode.state, at: Location(file: path), error.message) }
        do throws(Problem) {
            try writeAll(file.descriptor, magic, path: path)
            // A window's bytes are handed to the kernel on a thread of their own while the next
            // window's are made (in turn, the copies into the page cache were a third of a
            // second of the run's tail at 1M devices).
            let fd = file.descriptor
            var writing: WorkBeside<Void, Problem>?
            for first in stride(from: 0, to: chunks, by: window) {
                let pieces = ParallelLines.map(min(window, chunks - first), chunk: 1) { k -> [UInt8] in
                    let c = first + k
                    var out = PackedWriter()
                    out.bytes.reserveCapacity(chunk * 400)
                    for (_, at) in sorted[(c * chunk)..<min(sorted.count, (c + 1) * chunk)] {
                        // Its length patched in once the enrollment and the report are written.
                        let start = out.bytes.count
                        out.u32(0)
                        out.string(devices.keys[at])
                        out.bytes += devices.values[at].bytes
                        withUnsafeBytes(of: UInt32(out.bytes.count - start - 4).littleEndian) { for k in 0..<4 { out.bytes[start + k] = $0[k] } }
                    }
                    return out.bytes
                }
                try writing?.value()
                writing = WorkBeside { () throws(Problem) in
                    for piece in pieces { try writeAll(fd, piece, path: path) }
                }
            }
            try writing?.value()
            var end = PackedWriter()
            end.u32(endMark)
            end.u64(UInt64(order.count))
            try writeAll(file.descriptor, end.bytes, path: path)
            try file.commit()
        } catch {
            file.discard()
            throw Problem(StatusCode.state, at: Location(file: path), error.message)
        }
    }

    /// Version 2: the records found one after another (a length each), then read on every core.
    static func readVersion2(_ bytes: [UInt8], path: String) throws(Problem) -> StatusFold {
        var records: [Range<Int>] = []
        var at = magic.count
        func failure(_ message: String) -> Problem { Problem(StatusCode.state, at: Location(file: path), "\(path), byte \(at): \(message)") }
        while true {
            guard at + 4 <= bytes.count else { throw failure("the state file is cut short (no end mark)") }
            let length = bytes.withView { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) }.littleEndian
            if length == endMark {
                guard at + 12 == bytes.count else { throw failure("bytes after the end mark") }
                let count = bytes.withView { $0.loadUnaligned(fromByteOffset: at + 4, as: UInt64.self) }.littleEndian
                guard count == UInt64(records.count) else { throw failure("the end mark counts \(count) records, the file holds \(records.count)") }
                break
            }
            guard at + 4 + Int(length) <= bytes.count else { throw failure("the state file is cut short (a record of \(length) bytes)") }
            records.append((at + 4)..<(at + 4 + Int(length)))
            at += 4 + Int(length)
        }
        let read = try ParallelLines.map(records.count) { [records] i throws(Problem) -> (String, PackedReport) in
            try bytes.withView { b throws(Problem) in
                let record = b[view: records[i]]
                var c = PackedCursor(record)
                guard let id = c.string(), PackedReport.Fields(record[view: c.at..<c.end]) != nil else {
                    throw Problem(StatusCode.state, at: Location(file: path), "\(path), byte \(records[i].lowerBound - 4): the record there is not one appconfig status wrote")
                }
                return (record[view: id].text, PackedReport(bytes: [UInt8](record[view: c.at..<c.end])))
            }
        }
        var fold = StatusFold()
        fold.packed.reserveCapacity(read.count)
        for (id, report) in read { fold.packed[id] = report }
        return fold
    }
}

/// Version 1 of the state, as the first releases wrote it: a header line, then per enrollment a
/// line `{"enrollment":…,"report":{…}}` (`DeviceReport` as JSON). Read (lean, a line at a time on
/// every core; a line the lean read does not take goes to the values' reader, which says what is
/// wrong with it), never written: the next run writes version 2.
enum StatusStateVersion1 {
    static let header = Array(#"{"state":"appconfig-status-state 1"}"#.utf8) + [0x0A]

    static func read(_ bytes: [UInt8], path: String) throws(Problem) -> StatusFold {
        var fold = StatusFold()
        let lines = bytes.lineRanges
        guard let first = lines.first, bytes[first].elementsEqual(header.dropLast()) else {
            throw Problem(StatusCode.state, at: Location(file: path, line: 1), "\(path) is not a state file appconfig status wrote")
        }
        let entries = try ParallelLines.map(lines.count - 1) { i throws(Problem) -> (String, DeviceReport)? in
            let line = bytes[lines[i + 1]]
            if line.isEmpty { return nil }
            if let lean = LeanJSON(line), let entry = decode(lean) { return entry }
            var message = "no enrollment and report"
            do throws(Problem) { _ = try JSONReader.document(Array(line), file: path) } catch { message = error.message }
            throw Problem(StatusCode.state, at: Location(file: path, line: i + 2), "not a line of a status state file: \(message)")
        }
        fold.packed.reserveCapacity(entries.count)
        for case let (id, report)? in entries { fold.packed[id] = PackedReport(report) }
        return fold
    }

    /// A line read back: the enrollment and its report; nil when it is not one.
    static func decode(_ j: LeanJSON) -> (String, DeviceReport)? {
        func strings(_ node: Int?) -> [String] { j.items(node).compactMap(j.string) }
        guard let id = j.string(j.member(0, "enrollment")), let r = j.member(0, "report"), j.isObject(r) else { return nil }
        var report = DeviceReport()
        for (key, value) in j.members(j.member(r, "apps")) {
            guard let bundle = j.string(key) else { return nil }
            var states: [String: String] = [:]
            for (e, state) in j.members(j.member(value, "extensionStates")) { if let e = j.string(e) { states[e] = j.string(state) } }
            report.apps[bundle] = .init(state: j.string(j.member(value, "state")), declaration: j.string(j.member(value, "declaration")),
                                        configState: j.string(j.member(value, "configState")), extensionStates: states,
                                        reasons: strings(j.member(value, "reasons")))
        }
        for (key, value) in j.members(j.member(r, "commands")) {
            guard let uuid = j.string(key) else { return nil }
            report.commands[uuid] = .init(status: j.string(j.member(value, "status")) ?? "", errorChain: strings(j.member(value, "errorChain")))
        }
        for (key, value) in j.members(j.member(r, "declarations")) {
            guard let declaration = j.string(key) else { return nil }
            report.declarations[declaration] = .init(token: j.string(j.member(value, "token")) ?? "", active: j.bool(j.member(value, "active")) ?? false,
                                                     valid: j.string(j.member(value, "valid")) ?? "unknown", reasons: strings(j.member(value, "reasons")))
        }
        report.errors = strings(j.member(r, "errors"))
        report.received = j.string(j.member(r, "received"))
        report.reports = j.integer(j.member(r, "reports")) ?? 0
        return (id, report)
    }
}
