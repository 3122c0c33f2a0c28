import AppConfigCore

extension Renderer {
    /// Renders a device whose variables are Swift strings (tests, demos, `compile --render`). It
    /// allocates; the fleet path hands `render(_:source:)` borrowed bytes instead. A variable absent
    /// from the dictionary is missing.
    public func renderCopy(_ values: [Variable: String], source: (Variable) -> Location? = { _ in nil }) throws(Problem) -> [UInt8] {
        var storage: [UInt8] = []
        var ranges: [(Int, Int)] = []
        for slot in image.program.slots {
            if let s = values[slot] {
                ranges.append((storage.count, s.utf8.count))
                storage += Array(s.utf8)
            } else {
                ranges.append((0, -1))
            }
        }
        return try storage.withView { bytes throws(Problem) in
            // A missing value has count -1.
            let slots = ranges.map { r in SlotValue(r.1 < 0 ? nil : bytes[view: r.0..<(r.0 + r.1)]) }
            return try slots.withView { values throws(Problem) in Array(try render(values, source: source)) }
        }
    }
}
