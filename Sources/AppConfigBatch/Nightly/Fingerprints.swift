import Dispatch
import Foundation

/// The inputs' fingerprints (size and SHA-256), read on another thread while the job runs.
final class FingerprintTask: @unchecked Sendable {
    private let group = DispatchGroup()
    private var result: [(String, String)] = []

    init(job: RenderJob) {
        var files: [(String, String?)] = [("spec", job.spec), ("values", job.values), ("inventory", job.sources.inventory)]
        switch job.sources.directory {
        case .ldif(let path): files.append(("directory", path))
        case .ldap(let c): result.append(("directory", "ldap " + c.url))
        case nil: files.append(("directory", nil))
        }
        let fixed = result, inputs = files
        DispatchQueue.global().async(group: group) {
            self.result = fixed + inputs.map { ($0.0, $0.1.map(Fingerprint.of) ?? "-") }
        }
    }

    func wait() -> [(String, String)] {
        group.wait()
        return result
    }
}
