import AppConfigCore
import AppConfigCompiler
import AppConfigPattern

/// The buffers a render writes per device, sized for a set of programs and shared by one worker's
/// renderers of all of them: a job with assignments has a program per set that devices match,
/// devices of all of them come in turn, and with buffers per renderer
/// each device wrote into memory that the devices of the other programs had pushed out of the cache.
/// Used by one thread at a time; a renderer reads nothing in it from one device to the next.
public final class RenderScratch {
    private let arena = BufferArena()
    /// The output and the dynamic strings' bytes (`Renderer.State`), moved out for each device.
    @exclusivity(unchecked) var state = Renderer.State(output: GrowingStorage(capacity: 4096), text: GrowingStorage(capacity: 1024))
    /// Per dynamic string of the current device: where its bytes are and what the scan found.
    let strings: WorkerSlots<DynamicString>
    /// The keys present for the current device, in plist order.
    let presentKeys: WorkerSlots<Int32>
    let pattern = Pattern.Scratch()
    /// The binary emitter's numbering tables: per instruction its object's index; per dedup class a
    /// stamp (the device's generation) and an index; per object its kind, argument and offset. The
    /// generation is bumped per device by whichever renderer renders it, so a stamp left by another
    /// program's device is never current.
    let refAt: WorkerSlots<Int32>
    let classStamp: WorkerSlots<UInt32>
    let classIndex: WorkerSlots<Int32>
    let dynamicClass: WorkerSlots<Int32>
    let objectKind: WorkerSlots<UInt8>
    let objectArgument: WorkerSlots<Int32>
    let objectOffset: WorkerSlots<Int>
    let generation: WorkerSlots<UInt32>

    /// Room for a device of any of `programs`.
    public init(for programs: [Program]) {
        func most(_ size: (Program) -> Int) -> Int { programs.lazy.map(size).max() ?? 0 }
        let dynamicStrings = most(\.dynamicStringCount)
        strings = arena.slots(count: dynamicStrings, repeating: DynamicString())
        presentKeys = arena.slots(count: most(\.keys.count), repeating: 0)
        refAt = arena.slots(count: most(\.instructions.count), repeating: 0)
        let classes = most { $0.constantClassCount + $0.dynamicStringCount }
        classStamp = arena.slots(count: classes, repeating: 0)
        classIndex = arena.slots(count: classes, repeating: 0)
        dynamicClass = arena.slots(count: dynamicStrings, repeating: 0)
        // At most one object per instruction, plus the root.
        let objects = most(\.instructions.count) + 1
        objectKind = arena.slots(count: objects, repeating: 0)
        objectArgument = arena.slots(count: objects, repeating: 0)
        objectOffset = arena.slots(count: objects, repeating: 0)
        generation = arena.slots(count: 1, repeating: UInt32(0))
    }

    /// Whether a device of `program` fits.
    func fits(_ program: Program) -> Bool {
        strings.count >= program.dynamicStringCount && presentKeys.count >= program.keys.count
            && refAt.count >= program.instructions.count && classStamp.count >= program.constantClassCount + program.dynamicStringCount
    }

    deinit {
        state.output.free()
        state.text.free()
    }
}
