import AppConfigBytes
import Dispatch

/// A one-line progress display on standard error (a terminal only): devices done, rate, ETA.
final class ProgressMeter: @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(total: Int, done: @escaping @Sendable () -> Int) {
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        let started = monotonicSeconds()
        timer.setEventHandler {
            let n = done()
            let elapsed = monotonicSeconds() - started
            let rate = elapsed > 0 ? Double(n) / elapsed : 0
            let eta = rate > 0 ? Double(total - n) / rate : 0
            writeStandardError("\r\u{1B}[K  \(n)/\(total) devices  \(formatRate(rate))devices/s  ETA \(String(format1: eta)) s")
        }
        timer.resume()
    }

    func finish() {
        timer.cancel()
        writeStandardError("\r\u{1B}[K")
    }
}
