extension RandomAccessCollection where Element: Comparable, Index == Int {
    /// In a collection sorted ascending, how many elements are below `value` (the index of the
    /// first not below it): where a part of a file's pieces finds its place in a sorted list.
    package func count(below value: Element) -> Int {
        var (low, high) = (startIndex, endIndex)
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low - startIndex
    }
}
