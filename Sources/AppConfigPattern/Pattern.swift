import AppConfigCore
import CPCRE2

/// A constraint `pattern`, compiled once by PCRE2 (UTF mode, JIT where the platform has it) and
/// shared by every thread: a compiled pcre2_code is immutable and safe to match concurrently, as
/// long as each thread brings its own `Pattern.Scratch`.
///
/// Matching is an unanchored search, as admin consoles test patterns, with match and depth limits
/// so that a hostile pattern or value cannot hang a render.
public final class Pattern: @unchecked Sendable {
    /// Why PCRE2 refused a pattern, and where (a 0-based offset in UTF-8 code units).
    public struct CompileError: Error, Equatable, Sendable {
        public var message: String
        public var offset: Int

        public init(message: String, offset: Int) {
            self.message = message
            self.offset = offset
        }
    }

    public enum MatchResult: Equatable, Sendable {
        case match
        case noMatch
        /// The match or depth limit was hit, or the subject is not valid UTF-8: no verdict.
        case failed(String)
    }

    public let source: String
    /// What the pattern tests outside the text it matches, read from its source; nil when it may
    /// look around its match (`Anchors.of`). With anchors known, a match inside a piece of text is
    /// a match of every text that holds the piece (at its start for `^`, at its end for `$`).
    public let anchors: Anchors?
    private let code: OpaquePointer
    private let context: OpaquePointer
    public let isJITCompiled: Bool

    /// Backtracking steps and nesting depth PCRE2 may spend on one subject.
    public static let matchLimit: UInt32 = 1_000_000
    public static let depthLimit: UInt32 = 10_000

    public init(_ source: String) throws(CompileError) {
        self.source = source
        var errorCode: Int32 = 0
        var errorOffset = 0
        let compiled = source.utf8CString.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: UInt8.self) { bytes in
                pcre2_compile_8(bytes.baseAddress, buffer.count - 1, PCRE2_UTF, &errorCode, &errorOffset, nil)
            }
        }
        guard let compiled else {
            throw CompileError(message: Self.message(for: errorCode), offset: errorOffset)
        }
        code = compiled
        anchors = Anchors.of(source)
        isJITCompiled = pcre2_jit_compile_8(compiled, PCRE2_JIT_COMPLETE) == 0
        context = pcre2_match_context_create_8(nil)
        pcre2_set_match_limit_8(context, Self.matchLimit)
        pcre2_set_depth_limit_8(context, Self.depthLimit)
    }

    deinit {
        pcre2_match_context_free_8(context)
        pcre2_code_free_8(code)
    }

    /// Per-thread match state (PCRE2's match data). Not Sendable: one per worker.
    public final class Scratch {
        fileprivate let matchData: OpaquePointer

        public init() {
            // One pair of offsets is all a yes/no search needs.
            matchData = pcre2_match_data_create_8(1, nil)
        }

        deinit { pcre2_match_data_free_8(matchData) }
    }

    /// Searches UTF-8 bytes (not NUL-terminated) for the pattern. With `validatedUTF8` the caller
    /// promises valid UTF-8 and PCRE2 skips its own check (and takes its JIT fast path).
    private func search(_ subject: UnsafeBufferPointer<UInt8>, scratch: Scratch, validatedUTF8: Bool) -> MatchResult {
        // An empty buffer may have a nil base address; PCRE2 wants a pointer either way.
        let rc: Int32 = withUnsafePointer(to: 0 as UInt8) { empty in
            let base = subject.baseAddress ?? empty
            if validatedUTF8 && isJITCompiled {
                return pcre2_jit_match_8(code, base, subject.count, 0, 0, scratch.matchData, context)
            }
            return pcre2_match_8(code, base, subject.count, 0, validatedUTF8 ? PCRE2_NO_UTF_CHECK : 0, scratch.matchData, context)
        }
        if rc >= 0 { return .match }
        if rc == PCRE2_ERROR_NOMATCH { return .noMatch }
        return .failed(Self.message(for: rc))
    }

    /// `search` of the bytes a view borrows.
    @inline(__always)
    package func search(_ subject: ByteView, scratch: Scratch, validatedUTF8: Bool = false) -> MatchResult {
        subject.withUnsafeBufferPointer { search($0, scratch: scratch, validatedUTF8: validatedUTF8) }
    }

    /// Convenience for checks outside the hot path (lint, tests).
    public func search(_ subject: String) -> MatchResult {
        var copy = subject
        let scratch = Scratch()
        return copy.withUTF8 { search($0, scratch: scratch, validatedUTF8: false) }
    }

    static func message(for code: Int32) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = pcre2_get_error_message_8(code, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<Int(n)], as: UTF8.self) : "PCRE2 error \(code)"
    }
}
