/// The phases of a render job, in the order they run: the keys of `summary.json`'s `seconds`, the
/// `phases:` line, the progress line and the observer's `phaseStarted` all name them from here.
public enum Phase: String, CaseIterable, Sendable, Codable, CodingKeyRepresentable {
    case compile, since, inventory, directory, join, assign, render, publish, report

    /// What the progress line says while the phase runs.
    public var activity: String {
        switch self {
        case .compile: "compiling the spec"
        case .since: "reading the previous generation"
        case .inventory: "reading the inventory"
        case .directory: "reading the directory"
        case .join: "joining devices to users"
        case .assign: "matching assignments"
        case .render: "rendering"
        case .publish: "publishing"
        case .report: "writing the report"
        }
    }
}
