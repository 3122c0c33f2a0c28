import AppConfigBatch
import AppConfigCore
import ArgumentParser

/// `appconfig rollback`: an earlier generation of a folder output published again.
struct RollbackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rollback",
        abstract: "Publish an earlier generation of a folder output again, as a new generation.",
        discussion: """
            After a night that published something wrong: appconfig rollback OUT makes the \
            generation before the current one current again, as a new generation (a forward step: \
            the next night's --since compares with it). --to names another kept generation. Under \
            the output's lock; held back past --max-change-ratio unless --force.

            Exit status: 0 rolled back; 1 not published (no earlier generation, over the ratio, \
            the output locked or unwritable); 2 usage.
            """
    )

    @Argument(help: "The folder output (its --out).") var output: String
    @Option(help: "The generation to publish again (a name in OUT.generations, g...); default: the one before the current.") var to: String?
    @Option(help: "Complete generations kept beside the output (the current one included; at least 2, so the one rolled back from stays).") var keep = 2
    @Option(name: .customLong("max-change-ratio"), help: "Publish nothing when a larger share of the devices would change (default: 0.5).") var maxChangeRatio = 0.5
    @Flag(help: "Roll back past --max-change-ratio.") var force = false
    @Flag(help: "Print nothing on success.") var quiet = false

    func run() throws {
        var rollback = Rollback(output: output)
        (rollback.target, rollback.keep, rollback.maxChangeRatio, rollback.force) = (to, keep, maxChangeRatio, force)
        let s = try reportingProblems { try rollback.run() }
        if !quiet { writeStandardOutput("rolled back \(s.output) from \(s.from) to \(s.to), published as a new generation: \(s.changed) of \(s.devices) devices change") }
    }
}
