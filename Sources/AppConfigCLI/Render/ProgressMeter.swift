import AppConfigBatch
import AppConfigCore
import Dispatch
import Foundation

/// A one-line progress display on standard error (a terminal only), across the job's phases: the
/// phase and its time while the sources load, then devices done, rate and ETA while they render.
/// Nothing is shown for a job that ends within `delay` seconds (1 s; `APPCONFIG_PROGRESS_AFTER`
/// overrides it, which the tests use), and the line is cleared at the end.
final class ProgressMeter: @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let lock = NSLock()
    private var phase = "starting"
    private var phaseStarted = monotonicSeconds()
    private var devices: (total: Int, done: @Sendable () -> Int)?
    private var shown = false
    /// When the line may first be drawn.
    private let due: Double


    init(after delay: Double) {
        due = monotonicSeconds() + max(delay, 0)
        timer = DispatchSource.makeTimerSource(queue: .global())
        timer.schedule(deadline: .now() + max(delay, 0), repeating: 0.25)
        timer.setEventHandler { [unowned self] in self.draw() }
        timer.resume()
    }

    /// The delay from the environment, else 1 s.
    static var delay: Double {
        ProcessInfo.processInfo.environment["APPCONFIG_PROGRESS_AFTER"].flatMap(Double.init) ?? 1
    }

    /// A new phase is drawn at once once the line is due (not at the timer's next tick, which a
    /// short phase would not live to see).
    func phase(_ phase: Phase) {
        lock.withLock {
            self.phase = phase.activity
            phaseStarted = monotonicSeconds()
            devices = nil
        }
        if monotonicSeconds() >= due { draw() }
    }

    func rendering(total: Int, done: @escaping @Sendable () -> Int) {
        lock.withLock {
            phase = "rendering"
            phaseStarted = monotonicSeconds()
            devices = (total, done)
        }
        if monotonicSeconds() >= due { draw() }
    }

    private func draw() {
        let line: String = lock.withLock {
            shown = true
            let elapsed = monotonicSeconds() - phaseStarted
            guard let devices else { return "  \(phase)  \(String(format1: elapsed)) s" }
            let n = devices.done()
            let rate = elapsed > 0 ? Double(n) / elapsed : 0
            let eta = rate > 0 ? Double(devices.total - n) / rate : 0
            return "  \(phase)  \(n)/\(devices.total) devices  \(formatRate(rate))devices/s  ETA \(String(format1: eta)) s"
        }
        writeStandardError("\r\u{1B}[K" + line)
    }

    func finish() {
        timer.cancel()
        if lock.withLock({ shown }) { writeStandardError("\r\u{1B}[K") }
    }
}
