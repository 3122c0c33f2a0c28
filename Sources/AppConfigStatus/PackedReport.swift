import AppConfigCore

/// One device's fold kept as the bytes of its state record (`StatusState` version 2, after the
/// enrollment): counts and strings in one array. Why: a fold of dictionaries of strings was about
/// fifteen objects per device, each made, retained, released and freed, and the state's write took
/// each apart again; at 1M devices that was a fifth of a status run's CPU (perf,
/// `Status.1000kEvents.foldAndJoin`). Packed, a report folds by copying byte ranges, is written as
/// it is, and is judged where it lies. Entries (declarations, apps, extensions, commands) are in
/// the byte order of their keys, so the same fold is the same bytes.
///
/// The fields, in order: the reports folded (a count); when the newest came (an optional
/// string); the newest report's errors (strings); declarations by Identifier (token, active as a
/// byte, valid, reasons); apps by bundle ID (state, declaration and `config-state` as optional
/// strings, extension states as entries of strings, reasons); commands by UUID (status, error
/// chain). A count is seven bits a byte, low first; a string its length, then its UTF-8; an
/// optional a byte 0 or 1 before it; entries their count, then each key before its value.
struct PackedReport: Sendable, Equatable {
    var bytes: [UInt8]

    /// A device with nothing reported.
    static let empty = PackedReport(bytes: [0, 0, 0, 0, 0, 0])

    init(bytes: [UInt8]) { self.bytes = bytes }

    /// `report` packed (the server's answers, a version 1 state, an embedder's).
    init(_ report: DeviceReport) {
        var w = PackedWriter()
        w.count(report.reports)
        w.optional(report.received)
        w.strings(report.errors)
        w.entries(report.declarations) { w, d in
            w.string(d.token)
            w.bytes.append(d.active ? 1 : 0)
            w.string(d.valid)
            w.strings(d.reasons)
        }
        w.entries(report.apps) { w, a in w.app(a) }
        w.entries(report.commands) { w, c in
            w.string(c.status)
            w.strings(c.errorChain)
        }
        bytes = w.bytes
    }

    /// The report unpacked (nil when the bytes are not a report the packer made).
    var report: DeviceReport? {
        bytes.withView { b -> DeviceReport? in
            var c = PackedCursor(b)
            guard let reports = c.count(), let received = c.optionalText(), let errors = c.texts() else { return nil }
            var r = DeviceReport()
            r.reports = reports
            r.received = received
            r.errors = errors
            guard let declarations = c.entries({ $0.declarationState() }), let apps = c.entries({ $0.appState() }),
                  let commands = c.entries({ $0.commandResult() }),
                  c.at == c.end else { return nil }
            r.declarations = declarations
            r.apps = apps
            r.commands = commands
            return r
        }
    }

    /// When the newest report or result came.
    var received: String? { bytes.withView { PackedView($0).received } }

    /// Where each field lies in a packed report: `received` and the sections are their encoded
    /// bytes (count or flag included), copied whole when a report is folded.
    struct Fields {
        var reports: Int
        var received: Range<Int>
        var errors: Range<Int>
        var declarations: Range<Int>
        var apps: Range<Int>
        var commands: Range<Int>

        /// The fields of `b`, checked to the last byte; nil where `b` is not what the packer makes.
        init?(_ b: ByteView) {
            var c = PackedCursor(b)
            guard let reports = c.count() else { return nil }
            self.reports = reports
            var start = c.at
            guard c.optional() != nil else { return nil }
            received = start..<c.at
            start = c.at
            guard c.skipStrings() else { return nil }
            errors = start..<c.at
            start = c.at
            guard c.skipEntries(PackedCursor.skipDeclaration) else { return nil }
            declarations = start..<c.at
            start = c.at
            guard c.skipEntries(PackedCursor.skipApp) else { return nil }
            apps = start..<c.at
            start = c.at
            guard c.skipEntries(PackedCursor.skipCommand), c.at == c.end else { return nil }
            commands = start..<c.at
        }
    }

    /// Folds one report in: a full report replaces what it carries; an incremental one changes
    /// what it names (`management.declarations` whole, apps one by one, `_removed` takes one out).
    mutating func apply(_ update: StatusReportReader.Update) {
        bytes = bytes.withView { old in
            update.bytes.withView { u in
                // Ours: made by the packer, so their fields are there.
                let was = Fields(old).unsafelyUnwrapped
                var c = PackedCursor(u)
                var w = PackedWriter()
                w.bytes.reserveCapacity(old.count + u.count)
                w.count(was.reports + 1)
                let received = c.at
                let carriesReceived = if case .some(.some) = c.optional() { true } else { false }
                w.bytes.append(carriesReceived ? u[view: received..<c.at] : old[view: was.received])
                let errors = c.at
                _ = c.skipStrings()
                w.bytes.append(u[view: errors..<c.at])
                if update.carriesDeclarations {
                    let declarations = c.at
                    _ = c.skipEntries(PackedCursor.skipDeclaration)
                    w.bytes.append(u[view: declarations..<c.at])
                } else if update.full {
                    w.count(0)
                } else {
                    w.bytes.append(old[view: was.declarations])
                }
                if update.carriesApps {
                    let apps = c.at..<u.count
                    w.mergeApps(old: update.full ? nil : old[view: was.apps], changes: u[view: apps])
                } else if update.full {
                    w.count(0)
                } else {
                    w.bytes.append(old[view: was.apps])
                }
                w.bytes.append(old[view: was.commands])
                return w.bytes
            }
        }
    }

    /// Folds one command's result in (MDM deliveries): unpacked, changed and packed again.
    mutating func apply(command uuid: String, _ result: DeviceReport.CommandResult, received: String?) {
        var r = report.unsafelyUnwrapped
        r.commands[uuid] = result
        if let received { r.received = received }
        self = PackedReport(r)
    }
}

/// Packed bytes made: counts, strings, optionals, entries in the byte order of their keys.
struct PackedWriter {
    var bytes: [UInt8] = []

    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes += $0 } }

    /// A count or a length: seven bits a byte, low first.
    mutating func count(_ n: Int) {
        var v = UInt(n)
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    mutating func string(_ s: String) {
        count(s.utf8.count)
        bytes.append(contentsOf: s.utf8)
    }

    mutating func string(_ s: ArraySlice<UInt8>) {
        count(s.count)
        bytes += s
    }

    mutating func optional(_ s: ArraySlice<UInt8>?) {
        if let s {
            bytes.append(1)
            string(s)
        } else {
            bytes.append(0)
        }
    }

    mutating func optional(_ s: String?) {
        if let s {
            bytes.append(1)
            string(s)
        } else {
            bytes.append(0)
        }
    }

    mutating func strings(_ list: [String]) {
        count(list.count)
        for s in list { string(s) }
    }

    mutating func app(_ a: DeviceReport.AppState) {
        optional(a.state)
        optional(a.declaration)
        optional(a.configState)
        entries(a.extensionStates) { w, s in w.string(s) }
        strings(a.reasons)
    }

    /// A dictionary's entries in the byte order of their keys.
    mutating func entries<V>(_ d: [String: V], _ value: (inout PackedWriter, V) -> Void) {
        count(d.count)
        for key in d.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            string(key)
            value(&self, d[key].unsafelyUnwrapped)
        }
    }

    /// Entries written into `scratch` (`spans`: each one's key and whole entry), put in the byte
    /// order of their keys, the last of equal keys kept (as a dictionary's assignment would).
    mutating func sortedEntries(_ scratch: ByteView, _ spans: [(key: Range<Int>, entry: Range<Int>)]) {
        let order = spans.indices.sorted { a, b in
            let (x, y) = (scratch[view: spans[a].key], scratch[view: spans[b].key])
            if x.equals(y) { return a < b }
            return x.precedes(y)
        }
        var kept: [Int] = []
        kept.reserveCapacity(order.count)
        for (n, k) in order.enumerated() {
            if n + 1 < order.count, scratch[view: spans[k].key].equals(scratch[view: spans[order[n + 1]].key]) { continue }
            kept.append(k)
        }
        count(kept.count)
        for k in kept { bytes.append(scratch[view: spans[k].entry]) }
    }

    /// The apps kept (`old`'s entries; none after a full report) with a report's `changes` laid on
    /// them: each change a key, a byte (0: the app `_removed`, 1: its state follows), in key order.
    mutating func mergeApps(old: ByteView?, changes: ByteView) {
        // Twice over both lists: first to count what is kept, then to write it.
        for writing in [false, true] {
            var o = PackedCursor(old ?? .empty), n = PackedCursor(changes)
            var oldLeft = old == nil ? 0 : o.count().unsafelyUnwrapped, newLeft = n.count().unsafelyUnwrapped
            func nextOld() -> (key: Range<Int>, entry: Range<Int>)? {
                guard oldLeft > 0 else { return nil }
                oldLeft -= 1
                return o.appEntry()
            }
            func nextChange() -> (key: Range<Int>, keyField: Range<Int>, value: Range<Int>?)? {
                guard newLeft > 0 else { return nil }
                newLeft -= 1
                return n.appChange()
            }
            var kept = 0
            var app = nextOld(), change = nextChange()
            while app != nil || change != nil {
                if let a = app, change.map({ o.b[view: a.key].precedes(n.b[view: $0.key]) }) ?? true {
                    kept += 1
                    if writing { bytes.append(o.b[view: a.entry]) }
                    app = nextOld()
                } else if let c = change {
                    // The change replaces (or removes) the app of its key.
                    if let a = app, o.b[view: a.key].equals(n.b[view: c.key]) { app = nextOld() }
                    if let value = c.value {
                        kept += 1
                        if writing {
                            bytes.append(n.b[view: c.keyField])
                            bytes.append(n.b[view: value])
                        }
                    }
                    change = nextChange()
                }
            }
            if !writing { count(kept) }
        }
    }
}

/// A place in packed bytes, read forward: nil (or false) where they do not hold what the packer
/// writes, so that a damaged state file is told from one whole.
struct PackedCursor {
    let b: ByteView
    var at = 0
    let end: Int

    init(_ b: ByteView) {
        self.b = b
        end = b.count
    }

    mutating func byte() -> UInt8? {
        guard at < end else { return nil }
        defer { at += 1 }
        return b[at]
    }

    mutating func flag() -> Bool? {
        switch byte() {
        case 0?: false
        case 1?: true
        default: nil
        }
    }

    mutating func count() -> Int? {
        var v = 0, shift = 0
        while let byte = byte() {
            v |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return v }
            shift += 7
            if shift > 56 { return nil }
        }
        return nil
    }

    /// A string's UTF-8, where it lies.
    mutating func string() -> Range<Int>? {
        guard let n = count(), n <= end - at else { return nil }
        defer { at += n }
        return at..<(at + n)
    }

    /// An optional string: nil when damaged, `.some(nil)` when absent.
    mutating func optional() -> Range<Int>?? {
        switch byte() {
        case 0?: return .some(nil)
        case 1?: return string().map { .some($0) }
        default: return nil
        }
    }

    mutating func text() -> String? { string().map { String(decoding: b[view: $0], as: UTF8.self) } }

    mutating func optionalText() -> String?? {
        guard let o = optional() else { return nil }
        return .some(o.map { String(decoding: b[view: $0], as: UTF8.self) })
    }

    mutating func texts() -> [String]? {
        guard let n = count(), n <= end - at else { return nil }
        var out: [String] = []
        out.reserveCapacity(n)
        for _ in 0..<n {
            guard let s = text() else { return nil }
            out.append(s)
        }
        return out
    }

    mutating func entries<V>(_ value: (inout PackedCursor) -> V?) -> [String: V]? {
        guard let n = count(), n <= end - at else { return nil }
        var out: [String: V] = [:]
        out.reserveCapacity(n)
        for _ in 0..<n {
            guard let k = text(), let v = value(&self) else { return nil }
            out[k] = v
        }
        return out
    }

    mutating func skipStrings() -> Bool {
        guard let n = count(), n <= end - at else { return false }
        for _ in 0..<n { guard string() != nil else { return false } }
        return true
    }

    mutating func skipEntries(_ value: (inout PackedCursor) -> Bool) -> Bool {
        guard let n = count(), n <= end - at else { return false }
        for _ in 0..<n { guard string() != nil, value(&self) else { return false } }
        return true
    }

    mutating func declarationState() -> DeviceReport.DeclarationState? {
        guard let token = text(), let active = flag(), let valid = text(), let reasons = texts() else { return nil }
        return .init(token: token, active: active, valid: valid, reasons: reasons)
    }

    mutating func appState() -> DeviceReport.AppState? {
        guard let state = optionalText(), let declaration = optionalText(), let configState = optionalText(),
              let extensions = entries({ $0.text() }), let reasons = texts() else { return nil }
        return .init(state: state, declaration: declaration, configState: configState, extensionStates: extensions, reasons: reasons)
    }

    mutating func commandResult() -> DeviceReport.CommandResult? {
        guard let status = text(), let chain = texts() else { return nil }
        return .init(status: status, errorChain: chain)
    }

    static func skipDeclaration(_ c: inout PackedCursor) -> Bool {
        c.string() != nil && c.flag() != nil && c.string() != nil && c.skipStrings()
    }

    static func skipApp(_ c: inout PackedCursor) -> Bool {
        c.optional() != nil && c.optional() != nil && c.optional() != nil && c.skipEntries({ $0.string() != nil }) && c.skipStrings()
    }

    static func skipCommand(_ c: inout PackedCursor) -> Bool { c.string() != nil && c.skipStrings() }

    /// An app's entry where it lies: its key's UTF-8 and the whole entry.
    mutating func appEntry() -> (key: Range<Int>, entry: Range<Int>)? {
        let start = at
        guard let key = string(), Self.skipApp(&self) else { return nil }
        return (key, start..<at)
    }

    /// A change of a report's apps: its key (UTF-8, and with its length), and its state unless removed.
    mutating func appChange() -> (key: Range<Int>, keyField: Range<Int>, value: Range<Int>?)? {
        let start = at
        guard let key = string() else { return nil }
        let keyField = start..<at
        guard let present = flag() else { return nil }
        guard present else { return (key, keyField, nil) }
        let value = at
        guard Self.skipApp(&self) else { return nil }
        return (key, keyField, value..<at)
    }
}

/// A packed report read where it lies, for the join: a verdict unpacks only the fields it names
/// (its reasons, a stale token), never the rest.
struct PackedView {
    let b: ByteView
    let fields: PackedReport.Fields

    /// `b` is a report the packer made (the fold holds no other).
    init(_ b: ByteView) {
        self.b = b
        fields = PackedReport.Fields(b).unsafelyUnwrapped
    }

    struct Declaration {
        var token: ByteView
        var active: Bool
        var valid: ByteView
        /// Its reasons, as packed strings.
        var reasons: Range<Int>
    }

    struct App {
        var key: ByteView
        var state: ByteView?
        var declaration: ByteView?
        var configState: ByteView?
        /// Its extensions' states, as packed entries; its reasons, as packed strings.
        var extensions: Range<Int>
        var reasons: Range<Int>
    }

    var received: String? {
        var c = PackedCursor(b[view: 0..<fields.received.upperBound])
        c.at = fields.received.lowerBound
        return c.optionalText() ?? nil
    }

    var declaresNothing: Bool { b[fields.declarations.lowerBound] == 0 }

    /// The declaration `id`'s status, if reported.
    func declaration(_ id: String) -> Declaration? {
        var id = id
        return id.withUTF8 { id in
            var c = cursor(fields.declarations)
            for _ in 0..<c.count().unsafelyUnwrapped {
                let key = c.string().unsafelyUnwrapped
                let token = c.string().unsafelyUnwrapped, active = c.flag().unsafelyUnwrapped, valid = c.string().unsafelyUnwrapped
                let reasons = c.at
                _ = c.skipStrings()
                if b[view: key].equals(ByteView(id)) { return Declaration(token: b[view: token], active: active, valid: b[view: valid], reasons: reasons..<c.at) }
            }
            return nil
        }
    }

    /// The first app (in key order) that `matches`.
    func app(where matches: (App) -> Bool) -> App? {
        var c = cursor(fields.apps)
        for _ in 0..<c.count().unsafelyUnwrapped {
            let key = c.string().unsafelyUnwrapped
            let state = c.optional().unsafelyUnwrapped, declaration = c.optional().unsafelyUnwrapped, config = c.optional().unsafelyUnwrapped
            let extensions = c.at
            _ = c.skipEntries { $0.string() != nil }
            let reasons = c.at
            _ = c.skipStrings()
            let app = App(key: b[view: key], state: state.map { b[view: $0] }, declaration: declaration.map { b[view: $0] },
                          configState: config.map { b[view: $0] }, extensions: extensions..<reasons, reasons: reasons..<c.at)
            if matches(app) { return app }
        }
        return nil
    }

    /// The keys of the extension entries in `range` whose state is `state`, in key order.
    func extensions(_ range: Range<Int>, in state: StaticString) -> [String] {
        var c = cursor(range), out: [String] = []
        for _ in 0..<c.count().unsafelyUnwrapped {
            let key = c.string().unsafelyUnwrapped, value = c.string().unsafelyUnwrapped
            if b[view: value].equals(state) { out.append(String(decoding: b[view: key], as: UTF8.self)) }
        }
        return out
    }

    /// The command `uuid`'s result, if reported: its status and its error chain (packed strings).
    func command(_ uuid: String) -> (status: ByteView, chain: Range<Int>)? {
        var uuid = uuid
        return uuid.withUTF8 { uuid in
            var c = cursor(fields.commands)
            for _ in 0..<c.count().unsafelyUnwrapped {
                let key = c.string().unsafelyUnwrapped, status = c.string().unsafelyUnwrapped
                let chain = c.at
                _ = c.skipStrings()
                if b[view: key].equals(ByteView(uuid)) { return (b[view: status], chain..<c.at) }
            }
            return nil
        }
    }

    /// Packed strings, unpacked.
    func texts(_ range: Range<Int>) -> [String] {
        var c = cursor(range)
        return c.texts() ?? []
    }

    private func cursor(_ range: Range<Int>) -> PackedCursor {
        var c = PackedCursor(b[view: 0..<range.upperBound])
        c.at = range.lowerBound
        return c
    }
}

extension ByteView {
    /// The bytes as text (UTF-8, damaged sequences replaced).
    var text: String { String(decoding: self, as: UTF8.self) }

    /// Whether these are `s`'s UTF-8 bytes.
    func equals(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { equals(ByteView($0)) }
    }
}
