/// A setting that takes one of a few names (`--delivery ddm`, `"format": "xml"`): an enum whose raw
/// values are its spellings. A job file's reader names every choice when a value is none of them.
public protocol SettingChoice: CaseIterable, Codable, Sendable, RawRepresentable where RawValue == String {}

extension SettingChoice {
    /// "a, b or c", for messages.
    public static var choices: String {
        let names = allCases.map(\.rawValue)
        return names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}
