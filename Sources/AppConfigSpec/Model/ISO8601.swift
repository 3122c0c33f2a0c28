/// ISO-8601 dates as specs write them, without Foundation's formatters (locale- and
/// platform-dependent, and slow).
///
/// Accepted: `YYYY-MM-DD` (midnight UTC), and `YYYY-MM-DDThh:mm[:ss[.fraction]]` followed by `Z`,
/// `±hh:mm`, `±hhmm` or `±hh`; without a zone the time is taken as UTC (docs/design.md, semantics).
public enum ISO8601 {
    /// 1970-01-01 to 2001-01-01, the plist epoch.
    static let unixToPlistEpoch: Double = 978_307_200

    public static func parse(_ text: String) -> PlistDate? {
        var s = Array(text.utf8)[...]

        func digits(_ n: Int) -> Int? {
            guard s.count >= n else { return nil }
            var v = 0
            for _ in 0..<n {
                let b = s.first!
                guard b >= 0x30 && b <= 0x39 else { return nil }
                v = v * 10 + Int(b - 0x30)
                s.removeFirst()
            }
            return v
        }
        func take(_ c: Character) -> Bool {
            guard let b = s.first, b == c.asciiValue! else { return false }
            s.removeFirst()
            return true
        }

        guard let year = digits(4), take("-"), let month = digits(2), take("-"), let day = digits(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        // Whole microseconds, divided once at the end: the same double Python's
        // timedelta.total_seconds() gives, so binary dates equal plistlib's to the bit.
        var micros = Int64(daysFromCivil(year: year, month: month, day: day)) * 86_400_000_000
        if s.isEmpty { return date(micros) }

        guard take("T"), let hour = digits(2), take(":"), let minute = digits(2), hour < 24, minute < 60
        else { return nil }
        micros += Int64(hour * 3600 + minute * 60) * 1_000_000
        if take(":") {
            guard let whole = digits(2), whole < 60 else { return nil }
            micros += Int64(whole) * 1_000_000
            if take(".") || take(",") {
                // Digits past the sixth (below a microsecond) are dropped, as Python's datetime does.
                var scale: Int64 = 100_000
                var any = false
                while let b = s.first, b >= 0x30 && b <= 0x39 {
                    micros += Int64(b - 0x30) * scale
                    scale /= 10
                    any = true
                    s.removeFirst()
                }
                guard any else { return nil }
            }
        }

        if take("Z") {
            // UTC
        } else if let sign = s.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            s.removeFirst()
            guard let oh = digits(2), oh <= 23 else { return nil }
            var om = 0
            if take(":") {
                guard let m = digits(2) else { return nil }
                om = m
            } else if !s.isEmpty {
                guard let m = digits(2) else { return nil }
                om = m
            }
            guard om < 60 else { return nil }
            let offset = Int64(oh * 3600 + om * 60) * 1_000_000
            micros += sign == UInt8(ascii: "+") ? -offset : offset
        }
        guard s.isEmpty else { return nil }
        return date(micros)
    }

    /// Microseconds since 1970 -> seconds since 2001, one correctly rounded division.
    static func date(_ unixMicros: Int64) -> PlistDate {
        PlistDate(secondsSince2001: Double(unixMicros - 978_307_200_000_000) / 1_000_000)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` in UTC, whole seconds (what every plist writer puts in XML).
    public static func format(_ date: PlistDate) -> String {
        let unix = (date.secondsSince2001 + unixToPlistEpoch).rounded(.down)
        let days = Int((unix / 86_400).rounded(.down))
        var rest = Int(unix - Double(days) * 86_400)
        let (y, m, d) = civilFromDays(days)
        let hh = rest / 3600; rest %= 3600
        let mm = rest / 60, ss = rest % 60
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = y >= 0 && y < 10000 ? String(repeating: "0", count: 4 - String(y).count) + String(y) : String(y)
        return "\(year)-\(two(m))-\(two(d))T\(two(hh)):\(two(mm)):\(two(ss))Z"
    }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 (Howard Hinnant's algorithm, proleptic Gregorian).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
