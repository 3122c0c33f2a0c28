/// Paths taken apart as text: the folder a path is in and its last component. Foundation's
/// `NSString.deletingLastPathComponent` trapped on Linux for a one-letter relative path (`--out o`:
/// SIGILL), and a relative output's parent is "" there, which joined with `/` named the root.
package enum PathText {
    /// The folder `path` is in: `a/b` -> `a`, `/a` -> `/`, `a` -> `.` (trailing slashes ignored).
    package static func folder(of path: String) -> String {
        let p = trimmed(path)
        guard let slash = p.lastIndex(of: "/") else { return "." }
        return slash == p.startIndex ? "/" : String(p[..<slash])
    }

    /// The last component: `a/b` -> `b`, `a` -> `a`.
    package static func name(of path: String) -> String {
        let p = trimmed(path)
        guard let slash = p.lastIndex(of: "/") else { return p }
        return String(p[p.index(after: slash)...])
    }

    /// A symlink's target as a path from where the caller stands: relative targets are relative
    /// to the link's folder.
    package static func resolve(_ target: String, besideLink link: String) -> String {
        target.hasPrefix("/") ? target : folder(of: link) == "." ? target : folder(of: link) + "/" + target
    }

    /// `path` without `.` components and repeated or trailing slashes: `./out` -> `out`,
    /// `a//./b/` -> `a/b`; `..` is kept (it is not resolved without the file system).
    package static func normalized(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        let joined = parts.joined(separator: "/")
        if absolute { return "/" + joined }
        return joined.isEmpty ? "." : joined
    }

    package static func trimmed(_ path: String) -> String {
        var p = Substring(path)
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return String(p)
    }
}
