import AppConfigCore
import AppConfigPush
import AppConfigSpec
import Foundation
import LibPlist

/// What devices reported, folded per enrollment ID: from NanoMDM's or NanoHUB's webhook events
/// (`--events`), from a DDM server's status endpoints, and from the state file a previous run kept.
/// Events are read in parallel (each line stands alone) and folded in their order.
public struct StatusFold: Sendable {
    /// By enrollment ID, packed (see `PackedReport`).
    var packed: [String: PackedReport] = [:]
    /// Events that could not be read: each names its line (and enrollment, when known).
    public var problems: [Problem] = []
    public var events = 0
    public var reports = 0
    public var results = 0
    /// Events of other kinds (check-ins other than status, `Idle`, other topics).
    public var ignored = 0

    public init() {}

    /// By enrollment ID, unpacked: every device's report made anew on each call (for a look at
    /// the fold, not for a loop).
    public var devices: [String: DeviceReport] { packed.compactMapValues(\.report) }

    public var deviceCount: Int { packed.count }

    /// One enrollment's report: read unpacked, set packed.
    public subscript(enrollment id: String) -> DeviceReport? {
        get { packed[id]?.report }
        set { packed[id] = newValue.map(PackedReport.init) }
    }

    /// One event, read.
    enum Parsed: Sendable {
        case report(String, StatusReportReader.Update)
        case result(String, uuid: String, DeviceReport.CommandResult, received: String?)
        case ignored
        case problem(Problem)
    }

    /// Folds the events of a JSON-lines file (one webhook event per line, as NanoMDM posts them),
    /// in order. `file` names it in errors.
    public mutating func fold(events bytes: [UInt8], file: String) {
        bytes.withUnsafeBufferPointer { fold(events: $0, file: file) }
    }

    /// The same over bytes held elsewhere (a mapped file: 2.36 GB of events read into memory of
    /// the process's own were seconds of page faults).
    mutating func fold(events bytes: UnsafeBufferPointer<UInt8>, file: String) {
        nonisolated(unsafe) let bytes = bytes
        let lines = LineRanges.of(UnsafeRawBufferPointer(bytes))
        // Room for a device per event at once: a table grown as it goes rehashes every key it holds.
        packed.reserveCapacity(packed.count + lines.count)
        // A window of lines at a time: read on every core, then applied in order, so that the
        // parsed events held at once stay bounded. A window is applied on a thread of its own
        // while the next is read (applied in turn on one core, it left the other idle for a
        // second at 1M events); the fold is moved into a box that thread owns meanwhile.
        let window = 65_536
        let box = FoldBox()
        swap(&box.fold, &self)
        var applying: WorkBeside<Void, Never>?
        for first in stride(from: 0, to: lines.count, by: window) {
            let count = min(window, lines.count - first), chunk = 2048
            // Each chunk of events names the file with a string of its own: one string in every
            // event's place on every core was a reference count all cores wrote for each event
            // (0.3-0.5 s of a run at 1M events).
            let names = (0..<(count + chunk - 1) / chunk).map { _ in String(decoding: Array(file.utf8), as: UTF8.self) }
            let parsed = ParallelLines.map(count, chunk: chunk) { k -> Parsed? in
                let line = UnsafeBufferPointer(rebasing: bytes[lines[first + k]])
                // Blank lines (and a CR before a line feed) are not events.
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { return nil }
                return Self.parse(Array(line), at: Location(file: names[k / chunk], line: first + k + 1))
            }
            applying?.value()
            applying = WorkBeside {
                for case let p? in parsed {
                    box.fold.events += 1
                    box.fold.apply(p)
                }
            }
        }
        applying?.value()
        swap(&box.fold, &self)
    }

    /// The fold while a window is applied on another thread: one thread at a time touches it
    /// (each apply is waited for before the next starts, and before the fold is taken back).
    private final class FoldBox: @unchecked Sendable {
        var fold = StatusFold()
    }

    mutating func apply(_ p: Parsed) {
        switch p {
        case .report(let id, let update):
            reports += 1
            packed[id, default: .empty].apply(update)
        case .result(let id, let uuid, let result, let received):
            results += 1
            packed[id, default: .empty].apply(command: uuid, result, received: received)
        case .ignored: ignored += 1
        case .problem(let problem): problems.append(problem)
        }
    }

    /// One webhook event: `mdm.DeclarativeManagement` (a check-in whose `Endpoint` `status`
    /// carries the report in `Data`) or `mdm.Connect` (a command's result). Read lean: `topic` and
    /// `created_at` at the top, the others in its `checkin_event` or `acknowledge_event` (never
    /// deeper: `url_params` holds the device's own query). An event it cannot read (not JSON, a
    /// field missing) goes to the values' reader, which names what is wrong.
    static func parse(_ line: [UInt8], at location: Location) -> Parsed {
        guard let j = LeanJSON(line), let topic = j.string(j.member(0, "topic")) else { return parseFully(line, at: location) }
        guard topic == "mdm.DeclarativeManagement" || topic == "mdm.Connect" else { return .ignored }
        let body = j.member(0, topic == "mdm.Connect" ? "acknowledge_event" : "checkin_event")
        guard let enrollment = j.string(j.member(body, "enrollment_id")) ?? j.string(j.member(body, "udid")), !enrollment.isEmpty,
              let raw = j.utf8(j.member(body, "raw_payload")) else { return parseFully(line, at: location) }
        return read(topic: topic, enrollment: enrollment, rawPayload: raw, commandUUID: j.string(j.member(body, "command_uuid")),
                    status: j.string(j.member(body, "status")), received: j.utf8(j.member(0, "created_at")), at: location)
    }

    /// The values' reader, for an event the lean read did not take: it names what is wrong.
    static func parseFully(_ line: [UInt8], at location: Location) -> Parsed {
        func problem(_ message: String, enrollment: String? = nil) -> Parsed {
            .problem(Problem(StatusCode.event, at: location, (enrollment.map { "enrollment \(Problem.printable($0)): " } ?? "") + message))
        }
        let event: RawValue
        do { event = try JSONReader.document(line, file: location.file) } catch {
            return problem("not a JSON event: \(error.message)")
        }
        guard case .dictionary(let top) = event.kind else { return problem("an event is a JSON object, not \(event.typeName)") }
        guard let topic = StatusReportReader.string(top, "topic") else { return problem("no \"topic\": not a NanoMDM webhook event") }
        let received = StatusReportReader.string(top, "created_at").map { Array($0.utf8)[...] }
        let body: String
        switch topic {
        case "mdm.DeclarativeManagement": body = "checkin_event"
        case "mdm.Connect": body = "acknowledge_event"
        default: return .ignored
        }
        guard let inner = StatusReportReader.member(top, body), case .dictionary(let e) = inner.kind else {
            return problem("a \(topic) event without its \(body)")
        }
        guard let enrollment = StatusReportReader.string(e, "enrollment_id") ?? StatusReportReader.string(e, "udid"), !enrollment.isEmpty else {
            return problem("a \(topic) event without an enrollment_id or udid")
        }
        guard let raw = StatusReportReader.string(e, "raw_payload") else {
            return problem("its raw_payload is not base64", enrollment: enrollment)
        }
        return read(topic: topic, enrollment: enrollment, rawPayload: Array(raw.utf8)[...], commandUUID: StatusReportReader.string(e, "command_uuid"),
                    status: StatusReportReader.string(e, "status"), received: received, at: location)
    }

    /// An event's check-in or result, from its base64 `raw_payload`.
    static func read(topic: String, enrollment: String, rawPayload: ArraySlice<UInt8>, commandUUID: String?, status eventStatus: String?,
                     received: ArraySlice<UInt8>?, at location: Location) -> Parsed {
        func problem(_ message: String) -> Parsed {
            .problem(Problem(StatusCode.event, at: location, "enrollment \(Problem.printable(enrollment)): " + message))
        }
        guard let bytes = Base64.decode(rawPayload) else { return problem("its raw_payload is not base64") }
        if topic == "mdm.DeclarativeManagement", let flat = FlatPlistScan.endpointAndData(bytes) {
            // A status check-in as devices send it: read without libplist.
            guard let endpoint = flat.endpoint, !endpoint.data, endpoint.text.elementsEqual("status".utf8) else { return .ignored }
            guard let field = flat.data, field.data, let json = Base64.decode(field.text, skippingTabs: true) else {
                return problem("a status check-in without its Data")
            }
            return report(json, enrollment: enrollment, received: received, at: location)
        }
        let plist: PlistValue
        do { plist = try LibPlist.decode(bytes) } catch {
            return problem("its raw_payload is not a property list (\(error.message))")
        }
        if topic == "mdm.Connect" {
            guard let uuid = commandUUID ?? plist["CommandUUID"]?.text else { return .ignored }
            let status = eventStatus ?? plist["Status"]?.text ?? ""
            guard ["Acknowledged", "Error", "NotNow", "CommandFormatError"].contains(status) else { return .ignored }
            var chain: [String] = []
            if case .array(let errors)? = plist["ErrorChain"] {
                for err in errors {
                    let domain = err["ErrorDomain"]?.text ?? "?"
                    let code: String
                    if case .integer(let n)? = err["ErrorCode"] { code = String(n) } else { code = "?" }
                    let text = err["USEnglishDescription"]?.text ?? err["LocalizedDescription"]?.text ?? ""
                    chain.append("\(domain) \(code)" + (text.isEmpty ? "" : ": \(text)"))
                }
            }
            return .result(enrollment, uuid: uuid, .init(status: status, errorChain: chain), received: received.map { String(decoding: $0, as: UTF8.self) })
        }
        guard plist["Endpoint"]?.text == "status" else { return .ignored }
        guard case .data(let json)? = plist["Data"] else { return problem("a status check-in without its Data") }
        return report(json, enrollment: enrollment, received: received, at: location)
    }

    /// A status report's JSON, read.
    static func report(_ json: [UInt8], enrollment: String, received: ArraySlice<UInt8>?, at location: Location) -> Parsed {
        guard let lean = LeanJSON(json) else {
            var message = "its status report is not JSON"
            do { _ = try JSONReader.document(json, file: location.file) } catch { message += " (\(error.message))" }
            return .problem(Problem(StatusCode.event, at: location, "enrollment \(Problem.printable(enrollment)): " + message))
        }
        do {
            return .report(enrollment, try StatusReportReader.read(lean, received: received, at: .init(location, enrollment: enrollment)))
        } catch {
            return .problem(error)
        }
    }
}

extension PlistValue {
    /// A string's text, nil for another type.
    var text: String? { if case .string(let s) = self { s } else { nil } }
}

extension StatusFold {
    /// Folds the events of the file at `path`: mapped where it can be (a FIFO or an empty file is read).
    mutating func fold(eventsFile path: String) throws(Problem) {
        func failure(_ error: FileReadError) -> Problem {
            Problem(StatusCode.usage, at: Location(file: path), "--events \(path): \(error.problem.message)")
        }
        let mapped: MappedFile?
        do { mapped = try MappedFile(path, limit: Int.max, readOnly: true) } catch { throw failure(error) }
        guard let mapped else {
            do { fold(events: try readFileBytes(path, limit: 64 << 30), file: path) } catch { throw failure(error) }
            return
        }
        defer { mapped.unmap() }
        mapped.view.withUnsafeBufferPointer { fold(events: $0, file: path) }
        if let change = mapped.change() { throw failure(change) }
    }
}
