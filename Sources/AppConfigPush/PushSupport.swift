import AppConfigCore
import AppConfigSpec
import Foundation

/// Runs each key's work once per push, whoever asks first; later askers wait for its outcome (a
/// data asset shared by many devices is stored once, and each of them waits for it). The first
/// asker runs it in its own task: no task is made per key (a push has hundreds of thousands).
final class OnceEach: @unchecked Sendable {
    private enum State {
        case running([CheckedContinuation<PushFailure?, Never>])
        case done(PushFailure?)
    }

    private enum Role { case run, wait, done(PushFailure?) }

    private let lock = NSLock()
    private var states: [String: State] = [:]

    func run(_ key: String, _ body: () async -> PushFailure?) async -> PushFailure? {
        let role = lock.withLock { () -> Role in
            switch states[key] {
            case .done(let outcome)?: return .done(outcome)
            case .running?: return .wait
            case nil:
                states[key] = .running([])
                return .run
            }
        }
        switch role {
        case .done(let outcome):
            return outcome
        case .run:
            let outcome = await body()
            let waiters = lock.withLock { () -> [CheckedContinuation<PushFailure?, Never>] in
                defer { states[key] = .done(outcome) }
                if case .running(let waiters)? = states[key] { return waiters }
                return []
            }
            for w in waiters { w.resume(returning: outcome) }
            return outcome
        case .wait:
            return await withCheckedContinuation { continuation in
                let finished = lock.withLock { () -> PushFailure?? in
                    switch states[key] {
                    case .done(let outcome)?: return .some(outcome)
                    case .running(var waiters)?:
                        waiters.append(continuation)
                        states[key] = .running(waiters)
                        return nil
                    case nil: return .some(nil)
                    }
                }
                if let finished { continuation.resume(returning: finished) }
            }
        }
    }
}

/// Gathers ids into calls of at most `size` ids (KMFDDM's notify, NanoMDM's push): each id's
/// completion learns whether its call succeeded.
final class Batcher: @unchecked Sendable {
    typealias Completion = @Sendable (PushFailure?) -> Void
    private let size: Int
    private let send: @Sendable ([String]) async -> [String: PushFailure]
    private let lock = NSLock()
    private var pending: [(id: String, done: Completion)] = []

    /// `send` sends one call and returns the ids that failed, with why.
    init(size: Int, send: @escaping @Sendable ([String]) async -> [String: PushFailure]) {
        self.size = max(1, size)
        self.send = send
    }

    func add(_ id: String, done: @escaping Completion) async {
        let chunk = lock.withLock { () -> [(id: String, done: Completion)]? in
            pending.append((id, done))
            guard pending.count >= size else { return nil }
            defer { pending.removeAll(keepingCapacity: true) }
            return pending
        }
        if let chunk { await deliver(chunk) }
    }

    func flush() async {
        while true {
            let chunk = lock.withLock { () -> [(id: String, done: Completion)] in
                let c = Array(pending.prefix(size))
                pending.removeFirst(c.count)
                return c
            }
            if chunk.isEmpty { return }
            await deliver(chunk)
        }
    }

    private func deliver(_ chunk: [(id: String, done: Completion)]) async {
        var unique: [String] = []
        var seen = Set<String>()
        for entry in chunk where seen.insert(entry.id).inserted { unique.append(entry.id) }
        let failed = await send(unique)
        for entry in chunk { entry.done(failed[entry.id]) }
    }
}

/// The devices and problems of a push, from its workers.
final class PushTally: @unchecked Sendable {
    private let lock = NSLock()
    private(set) var failures: [PushDeviceProblem] = []
    private(set) var warnings: [PushDeviceProblem] = []
    private(set) var fatal: Problem?
    var devices = PushSummary.Devices()
    private(set) var finished = 0
    var collected = 0
    var keptInSets = 0
    var assetsVerified = 0
    var assetsNotVerifiable = 0

    func fail(_ device: String, _ failure: PushFailure) {
        lock.withLock {
            if failure.fatal {
                if fatal == nil { fatal = failure.problem }
                return
            }
            failures.append(PushDeviceProblem(device: device, problem: failure.problem))
            devices.failed += 1
            finished += 1
        }
    }

    /// A warning; one about a device (not the collection's) ends that device's turn.
    func warn(_ device: String, _ problem: Problem) {
        lock.withLock {
            warnings.append(PushDeviceProblem(device: device, problem: problem))
            if !device.isEmpty { finished += 1 }
        }
    }

    func update(_ body: (PushTally) -> Void) { lock.withLock { body(self) } }

    func done(removed: Bool) {
        lock.withLock {
            if removed { devices.removed += 1 } else { devices.pushed += 1 }
            finished += 1
        }
    }

    var isAborted: Bool { lock.withLock { fatal != nil } }
    var finishedCount: Int { lock.withLock { finished } }
}

/// Runs `body` over `items` with `jobs` workers, each taking the next item, until the items end or
/// the push is aborted: the devices of a push, the declarations of its collection.
package func forEachConcurrently<T: Sendable>(_ items: [T], jobs: Int, until aborted: @escaping @Sendable () -> Bool,
                                      _ body: @escaping @Sendable (T) async -> Void) async {
    let next = NSLock()
    nonisolated(unsafe) var position = 0
    await withTaskGroup(of: Void.self) { group in
        for _ in 0..<max(1, min(jobs, items.count)) {
            group.addTask {
                while !aborted() {
                    let i: Int = next.withLock { defer { position += 1 }; return position }
                    guard i < items.count else { return }
                    await body(items[i])
                }
            }
        }
    }
}

/// Small JSON reads of the servers' answers.
enum AnswerJSON {
    static func value(_ bytes: [UInt8]) -> RawValue? { try? JSONReader.document(bytes, file: "answer") }

    static func strings(_ bytes: [UInt8]) -> [String]? {
        guard let v = value(bytes) else { return nil }
        if case .null = v.kind { return [] }
        guard case .array(let list) = v.kind else { return nil }
        var out: [String] = []
        for item in list {
            guard case .string(let s) = item.kind else { return nil }
            out.append(s)
        }
        return out
    }

    static func member(_ v: RawValue?, _ key: String) -> RawValue? {
        guard let v, case .dictionary(let members) = v.kind else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    static func string(_ v: RawValue?) -> String? { if let v, case .string(let s) = v.kind { s } else { nil } }

    /// NanoMDM's per-enrollment errors: `{"status": {ID: {"command_error"|"push_error": TEXT}}}`.
    static func errors(_ bytes: [UInt8], field: String) -> [String: String] {
        guard case .dictionary(let members)? = member(value(bytes), "status")?.kind else { return [:] }
        var out: [String: String] = [:]
        for m in members {
            if let text = string(member(m.value, field)), !text.isEmpty { out[m.key] = text }
        }
        return out
    }
}
