/// Rates with a unit prefix (`2.4 M`), for summaries and the progress line.
func formatRate(_ r: Double) -> String {
    r >= 1e6 ? String(format1: r / 1e6) + " M" : r >= 1e3 ? String(format1: r / 1e3) + " k" : String(format1: r) + " "
}

extension String {
    /// One decimal place, without Foundation's locale-dependent formatting.
    init(format1 value: Double) {
        let tenths = Int((value * 10).rounded())
        self = "\(tenths / 10).\(abs(tenths % 10))"
    }

    func padding(_ width: Int) -> String { count >= width ? self : self + String(repeating: " ", count: width - count) }
}

extension String {
    /// Without the trailing line break, for printing a file that ends in one.
    func trimmingSuffix() -> String { hasSuffix("\n") ? String(dropLast()) : self }
}
