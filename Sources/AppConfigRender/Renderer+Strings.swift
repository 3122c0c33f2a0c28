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
        let result: Result<[UInt8], Problem> = storage.withUnsafeBufferPointer { bytes in
            // An empty string has no bytes (count 0: "empty"); a missing one has count -1.
            let slots = ranges.map { r in SlotValue(start: r.1 > 0 ? bytes.baseAddress! + r.0 : nil, count: r.1) }
            return slots.withUnsafeBufferPointer { slotBuffer in
                do throws(Problem) {
                    return .success(Array(try render(slotBuffer, source: source)))
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }
}
