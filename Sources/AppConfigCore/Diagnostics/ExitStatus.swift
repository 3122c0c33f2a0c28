/// The exit statuses of every command: scripts depend on them.
public enum ExitStatus {
    /// Done: every device rendered (or every file clean, for lint).
    public static let ok: Int32 = 0
    /// A fatal error, or more failures than allowed: nothing was published.
    public static let failed: Int32 = 1
    /// A usage error, or an input that cannot be read.
    public static let usage: Int32 = 2
    /// Published, but some devices failed or rows were skipped (the report names each).
    public static let partial: Int32 = 3
    /// Interrupted by SIGINT or SIGTERM: nothing was published.
    public static let interrupted: Int32 = 130
}
