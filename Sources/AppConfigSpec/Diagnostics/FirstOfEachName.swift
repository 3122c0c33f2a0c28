import AppConfigCore

/// The first of each name met while a list is read (keys, fields, assignments, credentials), so
/// that a later one of the same name is reported with where the first stands.
struct FirstOfEachName {
    private var seen: [String: Location] = [:]

    /// nil when `name` is met for the first time (its location is kept); else the first's location.
    mutating func earlier(_ name: String, at location: Location) -> Location? {
        if let first = seen[name] { return first }
        seen[name] = location
        return nil
    }
}
