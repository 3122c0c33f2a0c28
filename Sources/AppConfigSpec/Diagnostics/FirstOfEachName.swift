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

    /// A list's items read in order (`read`: the item and its number from 1; nil when it reported
    /// why not), the first of each name kept (`name`: an item's name and where it stands), each
    /// later one handed to `duplicate` with where the first stands.
    static func firsts<T>(of items: some Sequence<RawValue>, read: (RawValue, Int) -> T?, name: (T) -> (String, Location),
                          duplicate: (T, Location) -> Void) -> [T] {
        var seen = FirstOfEachName()
        var kept: [T] = []
        for (n, item) in items.enumerated() {
            guard let t = read(item, n + 1) else { continue }
            let (key, location) = name(t)
            if let first = seen.earlier(key, at: location) { duplicate(t, first) } else { kept.append(t) }
        }
        return kept
    }
}
