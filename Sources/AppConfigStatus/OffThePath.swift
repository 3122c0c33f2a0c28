import Dispatch

/// What a status run leaves for another thread once its answer is ready.
enum OffThePath {
    /// Frees `value` on another thread. The tables a run reads (1M devices, 3M declarations, 1M
    /// folds) are tens of millions of small allocations: freed on the caller's thread they took
    /// 6 s of one core after the answer was ready (the command line then exits; an embedder gets
    /// the memory back moments later). Clang's `-disable-free` is the same trade.
    static func release<T>(_ value: consuming T) {
        let box = Box(value)
        DispatchQueue.global(qos: .utility).async(group: pending) { box.drop() }
    }

    /// The releases not done yet.
    static let pending = DispatchGroup()

    private final class Box<T>: @unchecked Sendable {
        private var value: T?
        init(_ value: consuming T) { self.value = value }
        func drop() { value = nil }
    }
}
