import AppConfigSpec

/// The consoles `export` writes for, and what each takes.
public enum ExportTarget: String, Sendable, CaseIterable {
    /// Microsoft Graph `iosMobileAppConfiguration` bodies and their `assign` bodies.
    case intune
    /// Microsoft Graph `targetedManagedAppConfiguration` (`customSettings`: what Intune App SDK apps read).
    case intuneMAM = "intune-mam"
    /// Jamf Pro's app configuration plist, one per variant with its scope.
    case jamf
    /// Workspace ONE's `application_configuration` list per smart-group assignment.
    case ws1
    /// Ivanti AppConnect key/value pairs (strings only) per label.
    case ivanti
    /// Fleet's app store app `configuration` (an XML plist as a string).
    case fleet

    /// Whose tokens it writes.
    public var console: ConsoleTokens.Console {
        switch self {
        case .intune, .intuneMAM: .intune
        case .jamf: .jamf
        case .ws1: .ws1
        case .ivanti: .ivanti
        case .fleet: .fleet
        }
    }

    /// The console's name in messages.
    public var title: String {
        switch self {
        case .intune: "Intune (device app configuration)"
        case .intuneMAM: "Intune (managed app configuration)"
        case .jamf: "Jamf Pro"
        case .ws1: "Workspace ONE"
        case .ivanti: "Ivanti AppConnect"
        case .fleet: "Fleet"
        }
    }
}
