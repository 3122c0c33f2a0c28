import AppConfigCore
import AppConfigOutput
import AppConfigSpec
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A credential file whose path is a template (`identities/$(sAMAccountName).p12`), read as a root
/// job may read it: the directory's values choose a file name, never a folder. The template's
/// literal folder (its text before the first variable, up to the last `/`) is opened once per
/// read, relative to the values file's folder when it is relative; what the variables made is
/// walked below it with `openat` and `O_NOFOLLOW` (no symlink, no `..`), opened `O_NONBLOCK` (a
/// FIFO never blocks a worker), and read only when it is a regular file owned by the job's user or
/// root and not writable by others. A path without a variable is the admin's own: its last name
/// may be a symlink; the file's checks are the same.
enum ConfinedFile {
    /// Why a path was refused or could not be read, in words for a device's problem.
    struct Refusal: Error {
        var reason: String
        /// The variable whose value made the path unusable, when one did.
        var variable: Variable?
    }

    /// Characters a variable's value may not bring into a path: a folder separator, a parent
    /// folder, a C string's end, control characters.
    static func pathProblem(inValue value: String) -> String? {
        if value.contains("/") { return "holds \"/\"" }
        if value.contains("..") { return "holds \"..\"" }
        if value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "holds a control character or NUL" }
        return nil
    }

    /// The file the template names once each variable's value is substituted (`value(v)`,
    /// filters applied), read whole up to `limit`. `base`: the values file's folder.
    static func read(_ template: StringTemplate, base: String, limit: Int,
                     value: (StringTemplate.Part) throws(Refusal) -> String) throws(Refusal) -> (path: String, bytes: [UInt8]) {
        // The literal head (up to the first variable) and the rest, which the values fill in.
        var head = "", rest = "", inRest = false
        for part in template.parts {
            if case .literal(let s) = part, !inRest { head += s; continue }
            inRest = true
            switch part {
            case .literal(let s): rest += s
            case .variable(let v), .filtered(let v, _):
                let text = try value(part)
                if let why = pathProblem(inValue: text) {
                    throw Refusal(reason: "the value of $(\(v)) \(why): a variable's value names a file, never a folder", variable: v)
                }
                rest += text
            }
        }
        // No variable: the admin's own path, its folder and its last name.
        if !inRest, let slash = head.lastIndex(of: "/") {
            rest = String(head[head.index(after: slash)...])
            head = String(head[...slash])
        } else if !inRest {
            rest = head
            head = ""
        } else if let slash = head.lastIndex(of: "/") {
            rest = String(head[head.index(after: slash)...]) + rest
            head = String(head[...slash])
        } else {
            rest = head + rest
            head = ""
        }
        var folder = head.hasPrefix("/") ? head : (base == "." ? (head.isEmpty ? "." : head) : base + "/" + head)
        if folder.count > 1 && folder.hasSuffix("/") { folder.removeLast() }
        let path = folder == "." ? rest : folder + "/" + rest
        let names = rest.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let last = names.last, !names.contains(".."), last != "." else {
            throw Refusal(reason: "\(Problem.printable(path)) names no file below \(folder)")
        }
        var fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw Refusal(reason: "cannot read \(Problem.printable(path)): \(systemError())") }
        defer { close(fd) }
        for name in names.dropLast() where name != "." {
            let next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard next >= 0 else {
                throw Refusal(reason: "cannot read \(Problem.printable(path)): \(errno == ELOOP || errno == ENOTDIR ? "\(name) is not a folder (a symlink is not followed)" : systemError())")
            }
            close(fd)
            fd = next
        }
        // A path the admin wrote whole (no variable) may be a symlink they made (a distribution's
        // CA bundle link): followed. A name the directory's values made never is.
        let file = openat(fd, last, O_RDONLY | (inRest ? O_NOFOLLOW : 0) | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard file >= 0 else {
            throw Refusal(reason: "cannot read \(Problem.printable(path)): \(errno == ELOOP ? "it is a symlink, which is not followed" : systemError())")
        }
        defer { close(file) }
        var info = stat()
        guard fstat(file, &info) == 0 else { throw Refusal(reason: "cannot read \(Problem.printable(path)): \(systemError())") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw Refusal(reason: "\(Problem.printable(path)) is not a regular file") }
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw Refusal(reason: "\(Problem.printable(path)) is owned by user \(info.st_uid), not by the job's user or root")
        }
        guard info.st_mode & S_IWOTH == 0 else { throw Refusal(reason: "\(Problem.printable(path)) is writable by others") }
        guard Int(info.st_size) <= limit else { throw Refusal(reason: "\(Problem.printable(path)) is larger than \(byteSize(limit))") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(file, $0.baseAddress! + filled, $0.count - filled, off_t(filled)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            filled += n
        }
        bytes.removeSubrange(filled...)
        return (path, bytes)
    }
}
