@testable import AppConfigOutput
import AppConfigCore
import Foundation
import Testing
import TestSupport

/// `TrailingCopy`: what a writer appends to one file, copied into another as it comes (an
/// archive's manifest member from the manifest beside it). The target holds exactly the source's
/// bytes from the start given, after what it held, on one thread or beside the writer, inside the
/// kernel or read and written.
@Suite("Trailing copy")
struct TrailingCopyTests {
    @Test("pieces of random sizes: the target is its own bytes, then the source's from the start given",
          arguments: [(threads: 1, inKernel: true), (2, true), (1, false), (2, false)])
    func copiesWhatIsWritten(threads: Int, inKernel: Bool) throws {
        var random = SplitMix64(seed: UInt64(threads * 2 + (inKernel ? 1 : 0)))
        let head = Array("head of the source\n".utf8), before = Array("already in the target\n".utf8)
        let pieces = (0..<60).map { i in (0..<([0, 1, 4095, 70_000, 300_000][i % 5] + Int.random(in: 0...9, using: &random))).map { _ in UInt8.random(in: 0...255, using: &random) } }
        try withTemporaryDirectory { dir in
            let source = open(dir.path("source"), O_RDWR | O_CREAT | O_TRUNC, 0o600), target = open(dir.path("target"), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(source); close(target) }
            try writeAll(source, head, path: "source")
            try writeAll(target, before, path: "target")
            try Parallelism.limited(to: threads) { () throws(Problem) in
                let copy = TrailingCopy(from: (source, "source"), at: head.count, to: (target, "target"), inKernel: inKernel)
                var end = head.count
                for piece in pieces {
                    try writeAll(source, piece, path: "source")
                    end += piece.count
                    copy.written(upTo: end)
                }
                try copy.finish()
            }
            let copied = try Data(contentsOf: dir.url.appendingPathComponent("target"))
            let expected = before + pieces.flatMap { $0 }
            // Compared as one Bool: a failing `==` over megabytes makes Swift Testing diff them byte by byte.
            let same = copied.elementsEqual(expected)
            #expect(same, "\(copied.count) bytes copied, \(expected.count) expected")
        }
    }

    @Test("a target that cannot be written: the error names it, whichever way it copies", arguments: [true, false])
    func targetRefuses(inKernel: Bool) throws {
        try withTemporaryDirectory { dir in
            let source = open(dir.path("source"), O_RDWR | O_CREAT | O_TRUNC, 0o600)
            _ = FileManager.default.createFile(atPath: dir.path("target"), contents: Data())
            let target = open(dir.path("target"), O_RDONLY)
            defer { close(source); close(target) }
            try writeAll(source, Array(repeating: 7, count: 10_000), path: "source")
            let copy = TrailingCopy(from: (source, "source"), at: 0, to: (target, "out/target"), inKernel: inKernel)
            copy.written(upTo: 10_000)
            var thrown: Problem?
            do throws(Problem) { try copy.finish() } catch { thrown = error }
            #expect(thrown?.code.rawValue == OutputCode.outputWrite.rawValue)
            #expect(thrown?.message.hasPrefix("cannot write out/target: ") == true, "\(String(describing: thrown))")
        }
    }

    @Test("cancelled (the writer failed): it returns, and copies nothing more, finished or not")
    func cancel() throws {
        try withTemporaryDirectory { dir in
            let source = open(dir.path("source"), O_RDWR | O_CREAT | O_TRUNC, 0o600), target = open(dir.path("target"), O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(source); close(target) }
            let copy = TrailingCopy(from: (source, "source"), at: 0, to: (target, "target"))
            // Waited for from here with a deadline: a copy whose thread does not stop would hang
            // `cancel()` (it waits for the thread), and the test run with it.
            let returned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                copy.cancel()
                returned.signal()
            }
            guard returned.wait(timeout: .now() + 30) == .success else {
                Issue.record("cancel() did not return in 30 s: the copy's thread did not stop")
                return
            }
            try writeAll(source, Array(repeating: 1, count: 4096), path: "source")
            copy.written(upTo: 4096)
            // Finishing waits for whatever would still be copied: a copy not stopped copies it all.
            try copy.finish()
            #expect(try Data(contentsOf: dir.url.appendingPathComponent("target")).isEmpty)
        }
    }
}
