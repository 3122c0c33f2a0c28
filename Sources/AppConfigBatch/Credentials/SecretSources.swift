import AppConfigCore
import AppConfigOutput
import CFileSync
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A `file:` secret source, read as a root job may read it: a regular file or a pipe (a FIFO,
/// `file:<(vault read ...)`) read to its end up to a bound, never a device; a symlink into a folder
/// other users can write (`/tmp`) is refused, since they choose what it names.
enum SecretFile {
    static func read(_ path: String, name: String, limit: Int) throws(Problem) -> [UInt8] {
        /// `--secret NAME: PATH why`, or for a failed call `--secret NAME: cannot read PATH: reason`.
        func refuse(_ why: String?, _ reason: String = "") -> Problem {
            Problem(.secretSource, at: Location(file: path), "--secret \(name): " + (why.map { "\(path) \($0)" } ?? "cannot read \(path): \(reason)"))
        }
        var link = stat()
        guard lstat(path, &link) == 0 else { throw refuse(nil, systemError()) }
        // The shell's pipes (`<(...)`) are links to the process's own descriptors.
        let ownDescriptor = path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/")
        if link.st_mode & S_IFMT == S_IFLNK && !ownDescriptor {
            guard let resolved = realpath(path, nil) else { throw refuse(nil, systemError()) }
            let target = String(cString: resolved)
            free(resolved)
            var folder = stat()
            let parent = PathText.folder(of: target)
            guard stat(parent, &folder) == 0 else { throw refuse(nil, systemError()) }
            if folder.st_mode & (S_IWGRP | S_IWOTH) != 0 {
                throw refuse("is a symlink to \(Problem.printable(target)), in a folder other users can write: a secret is read from a folder only its owner writes")
            }
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw refuse(nil, systemError()) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw refuse(nil, systemError()) }
        switch info.st_mode & S_IFMT {
        case S_IFREG, S_IFIFO: break
        case S_IFDIR: throw refuse("is a folder")
        default: throw refuse("is a device or a socket, not a file or a pipe")
        }
        // To the end, whatever the size says (a pipe has none, /proc's files say 0).
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        defer { chunk.overwriteWithZeros() }
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                bytes.overwriteWithZeros()
                throw refuse(nil, systemError())
            }
            if n == 0 { return bytes }
            guard bytes.count + n <= limit else {
                bytes.overwriteWithZeros()
                throw refuse("holds more than \(byteSize(limit)): not a secret")
            }
            bytes += chunk[0..<n]
        }
    }
}

/// An `exec:` secret source: `/bin/sh -c COMMAND` in a process group of its own, standard input
/// from /dev/null, an environment without the other secrets and the LDAP password, its output
/// bounded, killed with its group when it runs past its time or the job is interrupted.
enum ChildProcess {
    static func output(of command: String, name: String, environment: [String: String], timeout: Double, limit: Int) throws(Problem) -> [UInt8] {
        let shown = "exec:\(Problem.printable(command))"
        func fail(_ why: String) -> Problem { Problem(.secretSource, "--secret \(name): \(shown) \(why)") }
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1]
        guard appconfig_pipe_cloexec(&out) == 0 else { throw fail("cannot run: \(systemError())") }
        guard appconfig_pipe_cloexec(&err) == 0 else {
            out.forEach { close($0) }
            throw fail("cannot run: \(systemError())")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out[1], 1)
        posix_spawn_file_actions_adddup2(&actions, err[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setpgroup(&attributes, 0)
        var mask = sigset_t(), defaults = sigset_t()
        sigemptyset(&mask)
        sigemptyset(&defaults)
        for sig in [SIGINT, SIGTERM, SIGPIPE, SIGHUP] { sigaddset(&defaults, sig) }
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/sh"), strdup("-c"), strdup(command), nil]
        let variables: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + variables).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, arguments, variables)
        close(out[1])
        close(err[1])
        defer {
            close(out[0])
            close(err[0])
        }
        guard spawned == 0 else { throw fail("cannot run: \(String(cString: strerror(spawned)))") }
        ProcessSecrets.children.add(pid)
        defer { ProcessSecrets.children.remove(pid) }

        var output: [UInt8] = [], errors: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        defer { chunk.overwriteWithZeros() }
        let deadline = monotonicSeconds() + timeout
        var open = [out[0], err[0]]
        var failure: String?
        while !open.isEmpty && failure == nil {
            let left = deadline - monotonicSeconds()
            if left <= 0 { failure = "did not finish within \(Int(timeout)) s (--secret-timeout): it was killed"; break }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left * 1000, 1_000)))
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { failure = "cannot be read: \(systemError())"; break }
            for p in fds where p.revents != 0 {
                let n = chunk.withUnsafeMutableBytes { Glibc.read(p.fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { open.removeAll { $0 == p.fd }; continue }
                if p.fd == out[0] {
                    guard output.count + n <= limit else { failure = "wrote more than \(byteSize(limit)): not a secret; it was killed"; break }
                    output += chunk[0..<n]
                } else if errors.count < 4096 {
                    errors += chunk[0..<min(n, 4096 - errors.count)]
                }
            }
        }
        if failure != nil { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // Killed because the job is being interrupted: its handler ends the process (exit 130);
        // this thread reports nothing meanwhile.
        if ProcessSecrets.children.isStopping { while true { pause() } }
        defer { errors.overwriteWithZeros() }
        if let failure {
            output.overwriteWithZeros()
            throw fail(failure)
        }
        let signal = status & 0x7F, code = (status >> 8) & 0xFF
        guard signal == 0 && code == 0 else {
            output.overwriteWithZeros()
            let first = String(decoding: errors, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? ""
            let why = signal != 0 ? "killed by signal \(signal)" : "status \(code)"
            throw fail("failed (\(why))" + (first.isEmpty ? "" : ": \(Problem.printable(first))"))
        }
        return output
    }
}

/// What the process does while it holds secrets: it cannot be dumped (no core, no ptrace by
/// another user's process), and the children that produce them end with it.
public enum ProcessSecrets {
    /// The `exec:` children running now, by process group: in slots of memory allocated once, so
    /// that a signal handler can read them without a lock or an allocation.
    public final class Children: @unchecked Sendable {
        private let lock = NSLock()
        private let slots = UnsafeMutablePointer<pid_t>.allocate(capacity: 64)

        init() { slots.initialize(repeating: 0, count: 64) }

        func add(_ pid: pid_t) { lock.withLock { if let i = (0..<64).first(where: { slots[$0] == 0 }) { slots[i] = pid } } }
        func remove(_ pid: pid_t) { lock.withLock { if let i = (0..<64).first(where: { slots[$0] == pid }) { slots[i] = 0 } } }

        private var stopping = false
        /// The job is ending (a signal): a child's death is not a failure to report.
        var isStopping: Bool { lock.withLock { stopping } }

        /// Kills every child's process group (an interrupted job ends its secret commands too).
        public func killAll() {
            lock.withLock {
                stopping = true
                killFromSignalHandler()
            }
        }

        /// The same without the lock: only `kill`, async-signal-safe (a crash signal's handler).
        public func killFromSignalHandler() {
            for i in 0..<64 where slots[i] > 0 { kill(-slots[i], SIGKILL) }
        }
    }

    public static let children = Children()

    /// Marks the process non-dumpable: a crash or a signal leaves no core that holds a secret.
    static func holdSecrets() { _ = appconfig_set_nondumpable() }
}

/// The secrets' bytes: pages of their own (mapped, left out of core dumps), zeroed and unmapped
/// when the store lets them go.
final class SecretPages {
    private var chunks: [UnsafeMutableRawBufferPointer] = []
    private var used = 0

    /// A copy of `bytes` in these pages.
    func copy(_ bytes: [UInt8]) -> MutableByteView {
        if chunks.isEmpty || used + bytes.count > chunks.last!.count {
            let size = (max(bytes.count, 1 << 20) + 4095) & ~4095
            guard let p = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), p != MAP_FAILED else {
                fatalError("cannot map \(size) bytes for secrets: \(systemError())")
            }
            _ = madvise(p, size, MADV_DONTDUMP)
            chunks.append(UnsafeMutableRawBufferPointer(start: p, count: size))
            used = 0
        }
        let start = chunks.last!.baseAddress!.advanced(by: used).assumingMemoryBound(to: UInt8.self)
        let buffer = UnsafeMutableBufferPointer(start: start, count: bytes.count)
        _ = buffer.initialize(from: bytes)
        used += bytes.count
        return WorkerSlots(buffer)
    }

    deinit {
        for c in chunks {
            c.initializeMemory(as: UInt8.self, repeating: 0)
            munmap(c.baseAddress, c.count)
        }
    }
}
