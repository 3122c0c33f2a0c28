import AppConfigCore

/// What a push would do, from the output and the journal alone (no request): `--dry-run` prints it.
public struct PushPlan: Sendable, Codable, Equatable {
    /// Devices in the output's index.
    public var devices = 0
    /// Not in the journal: pushed whole.
    public var new = 0
    /// In the journal with another digest (or command).
    public var changed = 0
    /// In the journal with this digest: nothing is sent.
    public var unchanged = 0
    /// Removals of devices the journal holds.
    public var removed = 0
    /// Removals of devices the journal does not hold: nothing to remove.
    public var removalsUnknown = 0
    /// Devices that differ from the journal but wait for a later stage (`PushOptions.devices`).
    public var waiting = 0
    /// Requests by kind, at most (a 304 needs no token read; collection depends on the server).
    public var requests: [String: Int] = [:]

    public var toSend: Int { new + changed + removed }
}

/// A device that failed (or was left as it was, with a warning), and why.
public struct PushDeviceProblem: Sendable {
    /// Empty for a problem of no one device (collection, the whole push).
    public var device: String
    public var problem: Problem

    public init(device: String, problem: Problem) {
        self.device = device
        self.problem = problem
    }
}

/// The account of a push: `summary.json` in `--report`.
public struct PushSummary: Sendable, Codable {
    public struct Devices: Sendable, Codable, Equatable {
        public var pushed = 0
        public var unchanged = 0
        public var removed = 0
        public var failed = 0
    }

    public struct RunError: Sendable, Codable, Equatable {
        public var code: String
        public var message: String
    }

    public var server: String
    public var url: String
    public var source: String
    public var journal: String
    public var delivery: String
    public var dryRun = false
    public var plan = PushPlan()
    public var devices = Devices()
    public var requests: [String: Int] = [:]
    public var requestsTotal = 0
    public var retries = 0
    /// Answers of 304: the server held it already.
    public var notModified = 0
    /// Declarations garbage collection deleted, and those it left because a set still names them.
    public var collected = 0
    public var keptInSets = 0
    public var assetsVerified = 0
    /// Assets a device fetches with MDM authentication: not fetched by `--verify-assets`.
    public var assetsNotVerifiable = 0
    public var seconds = 0.0
    public var requestsPerSecond = 0
    /// Set when the push was held back (a guard) and nothing was sent.
    public var heldBack: String?
    public var error: RunError?
    public var errorsByCode: [String: Int] = [:]
}

/// The outcome of `PushJob.run`.
public struct PushResult: Sendable {
    public var summary: PushSummary
    public var failures: [PushDeviceProblem] = []
    public var warnings: [PushDeviceProblem] = []
    /// What stopped the whole push, if anything did.
    public var fatal: Problem?

    /// 0 done; 3 some devices failed; 1 fatal or held back.
    public var exitStatus: Int32 {
        if fatal != nil || summary.heldBack != nil { return ExitStatus.failed }
        return failures.isEmpty ? ExitStatus.ok : ExitStatus.partial
    }
}
