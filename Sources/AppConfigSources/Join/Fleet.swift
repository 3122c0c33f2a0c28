import AppConfigCore
import CByteScan
import Foundation

/// The inventory joined to the directory: each device row knows its user (or that it has none),
/// and any variable of a device reads as bytes in the tables' buffers.
public final class Fleet: @unchecked Sendable {
    public let inventory: InventoryTable
    public let users: UserTable?
    /// Per row, its user or -1.
    private let userOfRow: [Int32]
    /// Devices whose user was not found, or whose user key is empty: they keep their device
    /// variables, and the program's missing-value policy decides about the rest.
    public let problems: [Problem]
    public var deviceCount: Int { inventory.rowCount }
    public let matchedCount: Int

    public init(inventory: InventoryTable, users: UserTable?) {
        self.inventory = inventory
        self.users = users
        var userOfRow = [Int32](repeating: -1, count: inventory.rowCount, parts: Parallelism.threads)
        var problems: [Problem] = []
        var matched = 0
        if let users, let keySlot = inventory.userKeySlot {
            let column = inventory.header[inventory.keptColumns[keySlot]]
            // The rows in one range per core, each range's problems kept apart and joined in order.
            let cores = Parallelism.threads
            var partProblems = [[Problem]](repeating: [], count: cores)
            var partMatched = [Int](repeating: 0, count: cores)
            userOfRow.withWorkerSlots { userOfRow in
                partProblems.withWorkerSlots { partProblems in
                    partMatched.withWorkerSlots { partMatched in
                        forEachRange(inventory.rowCount, parts: cores, parallelFrom: 65_536) { part, rows in
                          // Each row's key hashed 12 rows ahead, its slot, its candidate's key place
                          // and bytes read ahead (`UserTable.prefetchLookup`), in a ring of hashes.
                          withTemporarySlots(count: 16, repeating: UInt64(0)) { hashes in
                            func ahead(_ row: Int) {
                                if row + 12 < rows.upperBound {
                                    let h = users.joinHash(inventory.value(row: row + 12, slot: keySlot))
                                    hashes[(row + 12) & 15] = h
                                    users.prefetchLookup(hash: h, step: 0)
                                }
                                if row + 8 < rows.upperBound { users.prefetchLookup(hash: hashes[(row + 8) & 15], step: 1) }
                                if row + 4 < rows.upperBound { users.prefetchLookup(hash: hashes[(row + 4) & 15], step: 2) }
                            }
                            for row in rows.prefix(12) { hashes[row & 15] = users.joinHash(inventory.value(row: row, slot: keySlot)) }
                            // Counted here, stored once: both parts' counts share a cache line, which
                            // a count there a row at a time sent back and forth between the cores (a
                            // profile of a 10M night put a sixth of the join loop's samples on it).
                            var matchedHere = 0
                            defer { partMatched[part] = matchedHere }
                            for row in rows {
                                ahead(row)
                                let key = inventory.value(row: row, slot: keySlot)
                                if key.isEmpty {
                                    partProblems[part].append(Problem(.userKeyEmpty, at: inventory.location(of: row),
                                                                      "the device has no user: its \"\(column)\" is empty (a shared device?); its user variables are missing"))
                                } else if let u = users.user(forKey: key, hash: hashes[row & 15]) {
                                    userOfRow[row] = Int32(u)
                                    matchedHere += 1
                                } else {
                                    partProblems[part].append(Problem(.userNotFound, at: inventory.location(of: row),
                                                                      "no user has \(String(decoding: key, as: UTF8.self)) in the directory (\(users.source))"
                                                                      + Self.normalizationHint(key, users)))
                                }
                            }
                          }
                        }
                    }
                }
            }
            problems = Array(partProblems.joined())
            matched = partMatched.reduce(0, +)
        }
        self.userOfRow = userOfRow
        self.problems = problems
        matchedCount = matched
    }

    /// For a key not found that holds non-ASCII letters: whether a user has it in the other Unicode
    /// normalization (`é` as one code point, or as `e` and a combining accent: the same name, other
    /// bytes, as macOS and Windows exports differ). A hint only: keys are compared as bytes.
    static func normalizationHint(_ key: ByteView, _ users: UserTable) -> String {
        guard key.contains(where: { $0 >= 0x80 }) else { return "" }
        let text = String(decoding: key, as: UTF8.self)
        for (form, other) in [("decomposed (NFD)", text.decomposedStringWithCanonicalMapping), ("composed (NFC)", text.precomposedStringWithCanonicalMapping)]
        // Bytes, not `!=`: Swift's String equality is canonical equivalence, which holds here.
        where !other.utf8.elementsEqual(text.utf8) && Array(other.utf8).withView({ users.user(forKey: $0) }) != nil {
            return "; one has it written \(form): the same name in other bytes (export both sides in one normalization)"
        }
        return ""
    }

    public func user(ofRow row: Int) -> Int? { userOfRow[row] >= 0 ? Int(userOfRow[row]) : nil }

    /// Devices with a user key (matched or not).
    public var keyedCount: Int { matchedCount + problems.filter { $0.code == .userNotFound }.count }

    /// Why the join found few users, when fewer than half of the devices with a user key found
    /// theirs: the attribute searched, how many entries have it, and an attribute that would match
    /// more, tried against the users' values (`join.none` when none matched, else `join.few`).
    public func joinDiagnosis() -> Problem? {
        guard let users, let keySlot = inventory.userKeySlot, keyedCount > 0, matchedCount * 2 < keyedCount else { return nil }
        let attribute = users.joinAttribute
        let column = inventory.header[inventory.keptColumns[keySlot]]
        // Entries, and not one person among them: a schema (`olcSchemaConfig`), a configuration or
        // folders only, not a user export: said so, not diagnosed as a join of the wrong attribute.
        if users.count == 0, let entries = users.entries, entries > 0 {
            return Problem(.joinNone, at: Location(file: users.source),
                           "\(users.source) holds \(entries) entr\(entries == 1 ? "y" : "ies") and no person: a schema or a configuration, not a user export "
                           + "(export the users: ldapsearch -LLL '(objectClass=person)')")
        }
        var message = "\(matchedCount) of \(keyedCount) devices found their user: the inventory's \"\(column)\" was matched against "
            + "\(attribute), which \(users.attributeCounts[attribute.lowercased()] ?? 0) of \(users.count) directory users have"
        // The other attributes a join key is usually in, as the users' variables hold them.
        let candidates: [(UserVariable, String)] = [(.emailAddress, "mail"), (.upn, "userPrincipalName"), (.sAMAccountName, "sAMAccountName")]
        var best: (name: String, matches: Int)?
        for (variable, name) in candidates where name.lowercased() != attribute.lowercased() {
            var table = ByteKeyTable(capacity: users.count, foldingASCIICase: true)
            for position in 0..<users.count {
                let u = users.user(at: position)
                if let v = users.value(user: u, variable), !v.isEmpty { _ = table.insert(v, id: Int32(u)) { users.value(user: Int($0), variable)! } }
            }
            var matches = 0
            for row in 0..<inventory.rowCount {
                let key = inventory.value(row: row, slot: keySlot)
                if !key.isEmpty, table.find(key, keyOf: { users.value(user: Int($0), variable)! }) != nil { matches += 1 }
            }
            if matches > (best?.matches ?? matchedCount) { best = (name, matches) }
        }
        if let best {
            message += "; \(best.matches) of the inventory's user keys match \(best.name): --user-attribute \(best.name)?"
        } else {
            let held = users.attributeCounts.filter { $0.value > 0 }.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            message += held.isEmpty ? "; the entries hold none of the attributes read" : "; the entries have " + held.prefix(6).map { "\($0.key) (\($0.value))" }.joined(separator: ", ")
        }
        return Problem(matchedCount == 0 ? .joinNone : .joinFew, at: Location(file: users.source), message)
    }

    /// Where each variable of a program reads from, decided once.
    public struct SlotPlan: Sendable {
        enum Source: Sendable {
            case column(Int)
            /// The part of an address column before (local) or after its last `@`.
            case addressPart(Int, local: Bool)
            /// A user variable, by its column in the user table (`UserTable.columns`).
            case user(Int)
            case none
        }
        let sources: [Source]
        public let variables: [Variable]

        /// The plan's sources in a table of `arena`'s, for a worker that reads a plan per device:
        /// a `SlotPlan` passed per device retained and released its two arrays at each call, and cores retaining one shared array contend for its count.
        package func ownSources(in arena: BufferArena) -> Sources { Sources(buffer: arena.view(sources)) }

        /// A plan's sources (`ownSources(in:)`): a view, valid while its arena is, copied and
        /// passed with no reference counting.
        package struct Sources: @unchecked Sendable {
            let buffer: BufferView<Source>
        }
    }

    /// A plan for these variables. A `$(device.<Column>)` naming no column is an error here, before
    /// any device is rendered; a device variable with no column in this inventory is missing for every device.
    public func plan(for variables: [Variable]) throws(Problem) -> SlotPlan {
        var sources: [SlotPlan.Source] = []
        for v in variables {
            switch v {
            case .device(let d):
                sources.append(inventory.variableSlots[d].map { .column($0) } ?? .none)
            case .deviceAttribute(let name):
                guard let slot = inventory.slot(ofColumn: name) else {
                    throw Problem(.csvUnknownColumn, at: Location(file: inventory.file, line: 1), "$(device.\(name)): \(inventory.file) has no column \"\(name)\"")
                }
                sources.append(.column(slot))
            case .user(let u):
                sources.append(userSource(u))
            }
        }
        return SlotPlan(sources: sources, variables: variables)
    }

    /// The user variable a variable is read as from the directory (nil: it is read from the
    /// inventory, or is missing): a condition on it holds or fails for a user, whichever device.
    public func directoryVariable(_ variable: Variable) -> UserVariable? {
        guard case .user(let u) = variable, case .user = userSource(u) else { return nil }
        return u
    }

    /// A user variable the inventory carries is read from its column (over the directory's);
    /// without a directory, the address parts and `userName` are derived from the columns as the
    /// directory derives them.
    private func userSource(_ u: UserVariable) -> SlotPlan.Source {
        let columns = inventory.userVariableSlots
        if let c = columns[u] { return .column(c) }
        if let users { return users.columns.column(of: u).map { .user($0) } ?? .none }
        switch u {
        case .emailAddressLocalPart: return columns[.emailAddress].map { .addressPart($0, local: true) } ?? .none
        case .emailAddressDomain: return columns[.emailAddress].map { .addressPart($0, local: false) } ?? .none
        case .userName: return (columns[.upn] ?? columns[.emailAddress]).map { .column($0) } ?? .none
        default: return .none
        }
    }

    /// Calls `body(slot, bytes)` for each planned variable of a row; nil bytes = missing.
    @inline(__always)
    package func forEachValue(row: Int, plan: SlotPlan, _ body: (Int, ByteView?) -> Void) {
        plan.sources.withView { forEachValue(row: row, sources: $0, body) }
    }

    /// `forEachValue(row:plan:)` with the plan's own sources (`SlotPlan.ownSources(in:)`).
    @inline(__always)
    package func forEachValue(row: Int, plan: SlotPlan.Sources, _ body: (Int, ByteView?) -> Void) {
        forEachValue(row: row, sources: plan.buffer, body)
    }

    @inline(__always)
    private func forEachValue(row: Int, sources: BufferView<SlotPlan.Source>, _ body: (Int, ByteView?) -> Void) {
        let user = userOfRow[row]
        for (slot, source) in sources.enumerated() {
            switch source {
            case .column(let c): body(slot, inventory.value(row: row, slot: c))
            case .addressPart(let c, let local):
                let address = inventory.value(row: row, slot: c)
                guard let at = address.lastIndex(of: UInt8(ascii: "@")) else { body(slot, nil); continue }
                body(slot, local ? address[view: 0..<at] : address[view: (at + 1)...])
            case .user(let v): body(slot, user >= 0 ? users?.value(user: Int(user), index: v) : nil)
            case .none: body(slot, nil)
            }
        }
    }

    /// Starts the reads that `forEachValue(row:plan:)` will make, in three steps some rows apart,
    /// each finding in the cache what the one before fetched: 0 (furthest ahead) the row's ranges
    /// and its user, 1 the row's values and the user's ranges, 2 the user's values. Rows in
    /// device-key order are scattered over the inventory and the directory: read without it, each
    /// value was a cache (and TLB) miss on the render's path.
    @inline(__always)
    package func prefetch(row: Int, plan: SlotPlan.Sources, step: Int) {
        let sources = plan.buffer
        switch step {
        case 0:
            inventory.prefetchRanges(row: row)
            userOfRow.prefetch(at: row)
        case 1:
            // The users through optional chaining: `if let users` retained and released the table.
            for source in sources {
                switch source {
                case .column(let c), .addressPart(let c, _): inventory.prefetchValue(row: row, slot: c)
                case .user, .none: break
                }
            }
            if userOfRow[row] >= 0 { users?.prefetchRanges(user: Int(userOfRow[row])) }
        default:
            guard userOfRow[row] >= 0 else { return }
            for case .user(let v) in sources { users?.prefetchValue(user: Int(userOfRow[row]), index: v) }
        }
    }

    /// Where a variable's value for a row came from, for error messages: the CSV line for device
    /// variables (and for user variables of a device without a user), plus the user's DN for user
    /// variables. The device is named either way.
    public func source(of variable: Variable, row: Int) -> Location {
        var location = inventory.location(of: row)
        if case .user = variable, let u = user(ofRow: row), let users {
            location.dn = users.string(user: u, .dn)
        }
        return location
    }
}
