import AppConfigBatch
import AppConfigCore
import ArgumentParser

/// Runs `body`, turning the problems it throws into lines on standard error and an exit status:
/// a spec or values file that cannot be read, a shard the environment gets wrong, or a delivery
/// option that is missing or wrong, is a usage error (2); anything else that stops a command is a
/// failure (1).
func reportingProblems<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let problem as Problem {
        writeStandardError(stderrLine(problem))
        if let code = problem.code.as(JobCode.self), JobCode.usage.contains(code) { throw ExitCode(ExitStatus.usage) }
        throw ExitCode(ExitStatus.failed)
    } catch let list as ProblemList {
        for p in list.problems { writeStandardError(stderrLine(p)) }
        throw ExitCode(list.problems.contains { $0.code == InputCode.read } ? ExitStatus.usage : ExitStatus.failed)
    }
}

/// A problem with a line in a file reads as a compiler's (`file:line:col: error: ... [code]`);
/// others as `appconfig: PLACE: ... [code]`, the place left out when the message names it. A
/// hint follows on a line of its own, as lint prints it (`    hint: did you mean "email"?`).
func stderrLine(_ p: Problem) -> String {
    problemLine(p) + (p.hint.map { "    hint: \(Problem.printable($0))\n" } ?? "")
}

private func problemLine(_ p: Problem) -> String {
    if p.location.line > 0 { return p.description + "\n" }
    let place = p.location.description
    let prefix = place.isEmpty || p.message.contains(p.location.place ?? "\u{0}") ? "" : place + ": "
    return Problem.printable("appconfig: \(prefix)\(p.message) [\(p.code)]") + "\n"
}

/// Runs `body`, turning a `job.setting` problem (an option that cannot be taken) into the usage
/// error ArgumentParser would print for it: `Error: MESSAGE`, the command's usage, status 2.
func settingsProblems<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let problem as Problem where problem.code == JobCode.jobSetting {
        throw ValidationError(problem.message)
    }
}
