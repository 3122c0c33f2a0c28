import AppConfigCore
import AppConfigRender
import AppConfigSources

extension BatchRenderer {
    /// A worker's state: a renderer per variant (made when the worker first meets it, all of them
    /// writing into one set of per-device buffers), its slot buffer, its chunk buffer, what went
    /// wrong. Used by one thread at a time. It reads the variants' plans (their sources in memory
    /// of its own: no reference counting) and slot counts from copies of its own: read from shared
    /// arrays, each device's plan was retained and released by every core, which contended for
    /// its counts.
    /// Its properties used per device are not checked for exclusive access at run time
    /// (`@exclusivity(unchecked)`: one thread at a time, and each check cost more than the access).
    final class Worker: @unchecked Sendable {
        private let images: [ProgramImage]
        /// The variants' plans, their sources in tables of the worker's own (`ownSources(in:)`), one
        /// table for the variants that read the same variables (most do): per device the prefetch
        /// and the reads of devices' plans from a table per variant missed the cache.
        let plans: [Fleet.SlotPlan.Sources]
        private let arena = BufferArena()
        let slotCounts: [Int]
        /// Each variant's program hash, for its devices' input digests.
        let programHashes: [UInt64]
        private let options: BatchOptions
        private let scratch: RenderScratch
        @exclusivity(unchecked) private var renderers: [Renderer?]
        @exclusivity(unchecked) private var verifiers: [Verifier?]
        /// The device's values for its variant's program, filled before each render.
        let slots: WorkerSlots<SlotValue>
        /// The device's extensions' plists, each render's (`extensions.count`).
        @exclusivity(unchecked) var extensionPlists: [ByteView] = []
        @exclusivity(unchecked) var chunk = ChunkBuffers()
        @exclusivity(unchecked) var failures: [DeviceFailure] = []
        @exclusivity(unchecked) var rendered = 0
        @exclusivity(unchecked) var carried = 0

        init(images: [ProgramImage], plans: [Fleet.SlotPlan], options: BatchOptions) {
            self.images = images
            var made: [[Variable]: Fleet.SlotPlan.Sources] = [:]
            self.plans = plans.map { [arena] plan in
                if let sources = made[plan.variables] { return sources }
                let sources = plan.ownSources(in: arena)
                made[plan.variables] = sources
                return sources
            }
            slotCounts = images.map(\.slotCount)
            programHashes = images.map(\.program.metadata.hash)
            self.options = options
            scratch = RenderScratch(for: images.map(\.program))
            renderers = Array(repeating: nil, count: images.count)
            verifiers = Array(repeating: nil, count: images.count)
            slots = WorkerSlots(arena.table(count: max(images.map(\.slotCount).max() ?? 0, 1), repeating: .missing))
        }

        @inline(__always)
        func renderer(_ variant: Int) -> Renderer {
            if let r = renderers[variant] { return r }
            let r = Renderer(image: images[variant], format: options.format, xmlNesting: options.xmlNesting, scratch: scratch)
            renderers[variant] = r
            // A nested fragment (an MDM command's) is verified as the body of a plist of its own.
            if options.verify {
                verifiers[variant] = Verifier(program: images[variant].program, format: options.format, fragment: options.xmlNesting > 0)
            }
            return r
        }

        /// The variant's verifier under `--verify`, else nil without reading `verifiers` (each
        /// read copies a Verifier?, 128 bytes, out of the array: a quarter of a device's render
        /// pass when asked per device).
        @inline(__always)
        func verifier(_ variant: Int) -> Verifier? { options.verify ? verifiers[variant] : nil }
    }
}
