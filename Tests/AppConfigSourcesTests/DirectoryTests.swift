@testable import AppConfigCore
@testable import AppConfigSources
@testable import AppConfigSpec
import Foundation
import TestSupport
import Testing

/// DNs (RFC 4514), LDIF (RFC 2849), derived user variables and the join.
@Suite("Directory: DNs, LDIF, user variables, the join")
struct DirectoryTests {
    @Test("a DN is compared as its canonical spelling; the plain ones (most) are their bytes lowercased, without a parse", arguments: [
        ("CN=Sales,OU=Groups,DC=corp", "cn=sales,ou=groups,dc=corp", true),
        ("CN=Doe\\, Jane,OU=Sales,DC=corp", "cn=doe\\, jane,ou=sales,dc=corp", true),
        ("cn=a\\=b,dc=x", "cn=a\\=b,dc=x", true),
        ("CN=Sales, OU=Groups, DC=corp", "cn=sales,ou=groups,dc=corp", false),
        ("CN = Sales,OU=Groups", "cn=sales,ou=groups", false),
        ("cn=a=b,dc=x", "cn=a\\=b,dc=x", false),
        ("CN=Doe\\2C Jane,DC=corp", "cn=doe\\, jane,dc=corp", false),
        ("CN=\\#1,DC=corp", "cn=#1,dc=corp", false),
        ("CN=\"Doe, Jane\",DC=corp", "cn=doe\\, jane,dc=corp", false),
        ("CN=a+UID=b,DC=corp", "cn=a+uid=b,dc=corp", false),
        ("CN=trailing\\ ,DC=corp", "cn=trailing ,dc=corp", false),
    ])
    func canonicalDN(dn: String, canonical: String, plain: Bool) throws {
        #expect(String(decoding: try DistinguishedName.canonical(Array(dn.utf8)), as: UTF8.self) == canonical)
        #expect(Array(dn.utf8).withView(GroupBuilder.isPlain) == plain)
        #expect(Array(dn.utf8).withView(GroupBuilder.canonicalKey).map { String(decoding: $0, as: UTF8.self) } == canonical)
    }

    @Test("a group DN the parser refuses is no group key, plain or not: bytes that are not UTF-8, an empty type, an empty RDN", arguments: [
        (Array("CN=".utf8) + [0xC3] + Array(",DC=x".utf8), "the value is not UTF-8", 3),
        (Array("CN=a,DC=".utf8) + [0xFF], "the value is not UTF-8", 8),
        (Array("CN=ab".utf8) + [0xE9] + Array("cd,DC=x".utf8), "the value is not UTF-8", 5),
        (Array("CN=x\\,".utf8) + [0xC3, 0x28], "the value, its escapes decoded, is not UTF-8", 8),
        (Array("CN=x\\C3\\28".utf8), "the value, its escapes decoded, is not UTF-8", 10),
        (Array("=x,DC=y".utf8), "expected an attribute type and '='", 0),
        (Array("CN=x,".utf8), "expected an attribute type and '='", 5),
        (Array("CN=x,,DC=y".utf8), "expected an attribute type and '='", 5),
    ] as [([UInt8], String, Int)])
    func refusedGroupDN(dn: [UInt8], message: String, offset: Int) {
        #expect(throws: DistinguishedName.ParseError(message: message, offset: offset)) { try DistinguishedName.canonical(dn) }
        #expect(dn.withView(GroupBuilder.canonicalKey) == nil, "\(dn)")
    }

    /// What `isPlain` says of a DN the parser reads, from the parser: its canonical spelling is its
    /// bytes lowercased. (Of the others it says nothing: a directory's DNs are parsed when read.)
    static func parsedAndCanonicalIsLowercased(_ dn: [UInt8]) -> Bool? {
        guard let canonical = try? DistinguishedName.canonical(dn) else { return nil }
        return canonical == dn.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
    }

    @Test("plain DNs: a separator, space or escape at each place of an 8-byte word, and across words", arguments: [
        ("CN=abcd,OU=efghij,DC=x", true), ("CN=abcde\\,fg,DC=x", true), ("CN=abcdef\\,g,DC=x", true), ("CN=abcdefg\\,,DC=x", true),
        ("CN=abcdefgh\\,,DC=x", true), ("CN=abcdefg\\", false), ("CN=abcdefg ", false), ("CN=abcdefgh ", false),
        ("CN=abcdefg\\ ", false), ("CN=abcdef, OU=x", false), ("CN=abcdefg, OU=x", false), ("CN=abcdefgh ,OU=x", false),
        ("CN=abcd=efgh,OU=x", false), ("CN=Doe\\, Jane,OU=Sales 2,DC=corp,DC=example", true), ("CN=Zoë Müller,OU=R&D,DC=corp", true),
        ("CN=a\\\\,DC=x", true), ("CN=a\\\\ ,DC=x", false), ("CN=abcdefg\\\\,DC=x", true), ("cn=x", true), ("", false),
        ("CN=x\\2C y,DC=x", false), ("CN=1234567\\+,DC=x", true), ("CN=a+UID=b,DC=x", false), ("CN=\"a\",DC=x", false),
    ])
    func isPlainAgreesWithTheParser(dn: String, plain: Bool) {
        #expect(Array(dn.utf8).withView(GroupBuilder.isPlain) == plain, "\(dn)")
        if plain { #expect(Self.parsedAndCanonicalIsLowercased(Array(dn.utf8)) == true, "\(dn)") }
    }

    /// A DN `isPlain` passes is one whose canonical spelling is its bytes lowercased. It may refuse
    /// some of those (`#` inside a value): they are parsed, which costs time, not correctness.
    @Test func isPlainAgreesWithTheParserOnRandomDNs() {
        // The characters that matter, and some that do not, in DNs of 0 to 40 of them (over 5 words).
        let alphabet = ["=", ",", "\\", " ", "\"", "+", ";", "#", "<", ">", "a", "Z", "0", "9", "-", "é"].map { Array($0.utf8) }
        var generator = SplitMix64(seed: 42)
        var plain = 0, parsed = 0
        for _ in 0..<50_000 {
            // Half of the characters plain text (the last six), so that more DNs are valid.
            var dn = (0..<Int(generator.next() % 41)).flatMap { _ in
                alphabet[generator.next() % 2 == 0 ? 10 + Int(generator.next() % 6) : Int(generator.next() % UInt64(alphabet.count))]
            }
            if generator.next() % 2 == 0, dn.count > 4 { dn.replaceSubrange(0..<3, with: Array("CN=".utf8)) }
            guard let lowercased = Self.parsedAndCanonicalIsLowercased(dn) else { continue }
            parsed += 1
            guard dn.withView(GroupBuilder.isPlain) else { continue }
            plain += 1
            #expect(lowercased, "\(String(decoding: dn, as: UTF8.self))")
        }
        #expect(plain > 500 && parsed > 2 * plain, "\(plain) plain of \(parsed) parsed")  // both sides are reached
    }

    @Test(arguments: [
        ("CN=Jane Doe, OU=NA,OU=Users, OU=XY, DC=myCompany, DC=com", "Jane Doe", "XY"),   // the reference's sample
        ("CN=Doe\\, Jane,OU=Sales,DC=corp,DC=example", "Doe, Jane", "Sales"),
        ("cn=Rossi\\2C Ngozi 7,ou=Red,ou=Sales,ou=Americas,dc=corp,dc=example", "Rossi, Ngozi 7", "Americas"),
        ("CN=Ren\\C3\\A9e\\20,OU=R\\26D,DC=x", "Renée ", "R&D"),
        ("CN=a\\+b+UID=42,OU=\\#1 team ,DC=x", "a+b", "#1 team"),
        ("UID=jdoe+CN=John,DC=x", "John", nil),
        ("CN=\\<tag\\> \\\"q\\\" \\;\\=\\\\,DC=x", "<tag> \"q\" ;=\\", nil),
        ("CN=\"Doe, Jane\",O=Example", "Doe, Jane", nil),
        // Values' ends found eight bytes at a time: at, before and after a word's end.
        ("CN=abcdefgh,OU=ijklmnopq", "abcdefgh", "ijklmnopq"),
        ("CN=abcdefg,OU=abcdefghijklmnop", "abcdefg", "abcdefghijklmnop"),
        ("CN=abcdefghijk   ,OU=x  ", "abcdefghijk", "x"),
        ("CN=abcdefghij\\,k,OU=abcdefghijklmnop\\;", "abcdefghij,k", "abcdefghijklmnop;"),
        ("CN=abcdefgh;OU=x", "abcdefgh", "x"),
        ("CN=abcdefghijklmno+UID=1,OU=x", "abcdefghijklmno", "x"),
        ("CN=        ,OU=Zoë Müller-Lüdenscheidt", "", "Zoë Müller-Lüdenscheidt"),
    ] as [(String, String, String?)])
    func dn(text: String, cn: String, ou: String?) throws {
        let dn = try DistinguishedName(parsing: text)
        #expect(dn.commonName == cn)
        #expect(dn.organizationalUnit == ou)
        // As the user table reads them: from the DN's bytes, without the parsed DN.
        let pieces = try DistinguishedName.commonNameAndUnit(Array(text.utf8))
        #expect(pieces.cn.map { String(decoding: $0, as: UTF8.self) } == cn)
        #expect(pieces.ou.map { String(decoding: $0, as: UTF8.self) } == ou)
    }

    /// The C check the groups make of a DN read in one pass (`appconfig_dn_counts_plain`).
    func countsPlain(_ dn: [UInt8]) -> Bool { dn.withView { $0.dnCountsPlain } }

    /// The one-pass reading of plain DNs gives what `walk` gives, for every DN it takes (it leaves
    /// the others to `walk`), and takes the usual ones.
    @Test func plainDNsReadInOnePassAsWalked() throws {
        func pieces(_ p: (cn: DistinguishedName.Piece?, ou: DistinguishedName.Piece?), _ dn: [UInt8]) -> [[UInt8]?] {
            [p.cn?.bytes(in: dn), p.ou?.bytes(in: dn)]
        }
        for usual in ["CN=Dolores Doe 2,OU=North,OU=Field Service,OU=Americas,DC=corp,DC=example", "cn=x,ou=R&D,dc=y",
                      "UID=jdoe,OU=People,DC=x", "CN=Zoë Müller-Lüdenscheidt,OU=Équipe=1,O=x"] {
            let dn = Array(usual.utf8)
            let plain = try #require(dn.withView { DistinguishedName.plainCommonNameAndUnit(in: $0) }, "\(usual)")
            let walked = try dn.withView { v throws(DistinguishedName.ParseError) in try DistinguishedName.walkedCommonNameAndUnit(in: v) }
            #expect(pieces(plain, dn) == pieces(walked, dn))
        }
        // Random DNs of the bytes that matter: every one read in one pass matches the walk, and is
        // plain for the groups (its bytes lowercased are its canonical spelling) as `isPlain` says.
        let alphabet: [UInt8] = Array("CNOUDcnou=,,,+;\\\"#<> aé".utf8) + [0xFF]
        var generator = SplitMix64(seed: 7)
        var taken = 0, plainForGroups = 0
        for _ in 0..<100_000 {
            var dn: [UInt8] = []
            // Up to 8 RDNs of up to 13 bytes: the C check reads sixteen bytes at a time, then byte by byte.
            for _ in 0..<Int(1 + generator.next() % 8) {
                if !dn.isEmpty { dn.append(UInt8(ascii: ",")) }
                dn += [Array("CN=".utf8), Array("OU=".utf8), Array("dc=".utf8), []][Int(generator.next() % 4)]
                for _ in 0..<Int(generator.next() % 6) { dn.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
                for _ in 0..<Int(generator.next() % 8) { dn.append(UInt8(ascii: "a")) }
            }
            guard let plain = dn.withView({ DistinguishedName.plainCommonNameAndUnit(in: $0) }) else { continue }
            taken += 1
            let walked = try? dn.withView { v throws(DistinguishedName.ParseError) in try DistinguishedName.walkedCommonNameAndUnit(in: v) }
            #expect(walked.map { pieces($0, dn) } == pieces(plain, dn), "\(dn)")
            #expect(countsPlain(dn) == dn.withView(GroupBuilder.isPlain), "\(dn)")
            if dn.withView(GroupBuilder.isPlain) { plainForGroups += 1 }
        }
        // 300 RDNs of sixteen bytes: every `,` in one lane of the C check's counters, past what a
        // byte counts (255), the `=`s in three lanes.
        let long = (0..<300).map { ["ou=aaaaaaaaaaaa", "cn2=aaaaaaaaaaa", "c=aaaaaaaaaaaaa"][$0 % 3] }.joined(separator: ",")
        for (dn, plain) in [(long, true), (long + "=", false), ("a" + long, true)] {
            let bytes = Array(dn.utf8)
            #expect(countsPlain(bytes) == plain)
            #expect(bytes.withView(GroupBuilder.isPlain) == plain)
        }
        #expect(plainForGroups > 1_000 && plainForGroups < taken)
        #expect(taken > 5_000)
    }

    @Test func multiValuedRDN() throws {
        let dn = try DistinguishedName(parsing: "CN=a\\+b+UID=42,OU=x")
        #expect(dn.rdns.count == 2)
        #expect(dn.rdns[0].map(\.type) == ["CN", "UID"])
        #expect(dn.rdns[0].map(\.value) == ["a+b", "42"])
    }

    @Test(arguments: [("CN=x,OU", 5), ("=x", 0), ("CN=x\\", 4), ("CN=x\\zz", 4), ("CN=x;;", 5)])
    func badDN(text: String, offset: Int) {
        #expect { try DistinguishedName(parsing: text) } throws: { ($0 as? DistinguishedName.ParseError)?.offset == offset }
    }

    static let ldif = """
        version: 1
        # a comment
        dn: dc=corp,dc=example
        objectClass: domain
        dc: corp

        dn: CN=Doe\\, Jane,OU=Field,OU=EMEA,DC=corp,DC=example
        objectClass: user
        cn: Doe, Jane
        sAMAccountName: jdoe
        userPrincipalName: Jane.Doe@Corp.Example
        mail: jane.doe@corp.example
        mail: second@corp.example
        givenName: Jane
        sn: Doe
        displayName:: WmXDqyAmIDxDbz4=
        description: a long line that is
          folded in two
        preferredLanguage: de-DE

        dn: uid=bob,ou=People,dc=corp,dc=example
        objectClass: inetOrgPerson
        uid: bob
        cn: Bob Builder
        sn: Builder
        mail: bob@corp.example

        """

    @Test("LDIF: derived variables, base64, folding, first of several values, non-people passed over")
    func ldifUsers() throws {
        let users = try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif")
        #expect(users.problems.isEmpty)
        #expect(users.count == 2)
        let jane = try #require(users.user(forKey: "JANE.DOE@corp.example"))
        let expected: [UserVariable: String] = [
            .dn: "CN=Doe\\, Jane,OU=Field,OU=EMEA,DC=corp,DC=example", .cn: "Doe, Jane", .ou: "EMEA",
            .sAMAccountName: "jdoe", .upn: "Jane.Doe@Corp.Example", .emailAddress: "jane.doe@corp.example",
            .emailAddressLocalPart: "jane.doe", .emailAddressDomain: "corp.example", .userName: "Jane.Doe@Corp.Example",
            .firstName: "Jane", .lastName: "Doe", .displayName: "Zeë & <Co>", .locale: "de-DE",
        ]
        for v in UserVariable.allCases { #expect(users.string(user: jane, v) == expected[v], "\(v)") }
        let bob = try #require(users.user(forKey: "bob@corp.example"))
        #expect(users.string(user: bob, .sAMAccountName) == "bob")   // uid, the inetOrgPerson spelling
        #expect(users.string(user: bob, .displayName) == "Bob Builder")  // cn when there is no displayName
        #expect(users.string(user: bob, .userName) == "bob@corp.example")  // no UPN: the mail address
        #expect(users.string(user: bob, .ou) == "People")
        #expect(users.string(user: bob, .upn) == nil)
    }

    @Test("a table keeps the variables its programs read (and dn, the join candidates): the others read as absent, the kept ones as a full table has them", arguments: [
        ([], [.dn, .emailAddress, .sAMAccountName, .upn]),
        ([.ou, .displayName], [.dn, .displayName, .emailAddress, .ou, .sAMAccountName, .upn]),
        ([.cn, .emailAddressDomain, .userName, .locale], [.dn, .cn, .emailAddress, .emailAddressDomain, .locale, .sAMAccountName, .userName, .upn]),
        (Set(UserVariable.allCases), [.dn] + UserVariable.allCases.filter { $0 != .dn }),
    ] as [(Set<UserVariable>, [UserVariable])])
    func keptVariables(kept: Set<UserVariable>, columns: [UserVariable]) throws {
        var map = AttributeMap()
        map.keptVariables = kept
        let some = try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif", map: map)
        let all = try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif")
        #expect(some.columns.variables == columns)
        #expect(some.columns.stride == columns.count + 1)
        #expect(all.columns.stride == UserVariable.allCases.count + 1)
        for key in ["jane.doe@corp.example", "bob@corp.example"] {
            let (u, v) = (try #require(some.user(forKey: key)), try #require(all.user(forKey: key)))
            for variable in UserVariable.allCases {
                #expect(some.string(user: u, variable) == (columns.contains(variable) ? all.string(user: v, variable) : nil), "\(key) \(variable)")
            }
        }
        #expect(some.attributeCounts == all.attributeCounts)  // every attribute still read and counted
    }

    @Test("--user-attribute: the join can use sAMAccountName (case-insensitively) or any attribute")
    func joinAttribute() throws {
        var map = AttributeMap()
        map.joinAttribute = "sAMAccountName"
        let users = try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif", map: map)
        #expect(users.user(forKey: "JDOE") != nil)
        #expect(users.user(forKey: "bob") == nil)  // sAMAccountName only: bob has uid, not sAMAccountName
    }

    struct Bad: CustomTestStringConvertible, Sendable {
        var name: String
        var ldif: String
        var problems: [Problem]
        var users: Int
        var testDescription: String { name }
    }

    @Test(arguments: [
        Bad(name: "a change record", ldif: "dn: cn=a,dc=x\nchangetype: modify\nreplace: mail\nmail: a@x\n\ndn: cn=b,dc=x\nmail: b@x\n",
            problems: [Problem(.ldifChangeRecord, at: Location(file: "h.ldif", line: 2), "change records (changetype: modify) are not supported; give the directory's content")], users: 1),
        Bad(name: "a URL value", ldif: "dn: cn=a,dc=x\nmail:< file:///etc/passwd\n\ndn: cn=b,dc=x\nmail: b@x\n",
            problems: [Problem(.ldifURLValue, at: Location(file: "h.ldif", line: 2), "mail takes its value from a URL (\":<\"), which is not supported")], users: 1),
        Bad(name: "bad base64", ldif: "dn: cn=a,dc=x\nmail:: ***\n",
            problems: [Problem(.ldifBase64, at: Location(file: "h.ldif", line: 2), "the base64 value of mail is not valid base64")], users: 0),
        Bad(name: "no colon", ldif: "dn: cn=a,dc=x\njust text\n",
            problems: [Problem(.ldifSyntax, at: Location(file: "h.ldif", line: 2), "expected \"attribute: value\"")], users: 0),
        Bad(name: "no dn", ldif: "mail: a@x\n",
            problems: [Problem(.ldifSyntax, at: Location(file: "h.ldif", line: 1), "an entry starts with \"dn:\", not \"mail:\"")], users: 0),
        Bad(name: "a DN that does not parse", ldif: "\n\ndn: cn=a,ou\nmail: a@x\n",
            problems: [Problem(.ldifDN, at: Location(file: "h.ldif", line: 3), "DN \"cn=a,ou\" is not valid (expected an attribute type and '=' at offset 5); entry skipped")], users: 0),
        Bad(name: "a duplicate DN", ldif: "dn: cn=a,dc=x\nmail: a@x\n\ndn: CN=A,DC=X\nmail: b@x\n",
            problems: [Problem(.ldifDuplicateDN, at: Location(file: "h.ldif", line: 4, dn: "CN=A,DC=X"), "DN \"CN=A,DC=X\" appears again; this entry is skipped")], users: 1),
        Bad(name: "a duplicate join key", ldif: "dn: cn=a,dc=x\nmail: a@x\n\ndn: cn=b,dc=x\nmail: A@X\n",
            problems: [Problem(.userDuplicateKey, at: Location(file: "h.ldif", line: 4, dn: "cn=b,dc=x"),
                               "two users have the join key \"A@X\": \"cn=a,dc=x\" (line 1) and \"cn=b,dc=x\" (line 4); the first is used")], users: 2),
        Bad(name: "a byte order mark and version 1 before the first entry", ldif: "\u{FEFF}version: 1\n\ndn: cn=a,dc=x\nmail: a@x\n", problems: [], users: 1),
        Bad(name: "ldapsearch's output as it comes: its header comments and its trailer",
            ldif: "# extended LDIF\n#\n# LDAPv3\n# base <dc=x> with scope subtree\n#\n\n# a, x\ndn: cn=a,dc=x\nmail: a@x\n\n# search result\nsearch: 2\nresult: 0 Success\n\n# numResponses: 2\n# numEntries: 1\n",
            problems: [], users: 1),
    ])
    func badLDIF(_ bad: Bad) throws {
        let users = try LDIFReader.read(Array(bad.ldif.utf8), file: "h.ldif")
        #expect(users.problems == bad.problems)
        #expect(users.count == bad.users)
    }

    @Test("what cannot be a directory export is refused whole", arguments: [
        ("", Problem(.directoryEmpty, at: Location(file: "h.ldif"), "h.ldif holds no directory entries")),
        ("version: 1\n\n# nothing\n", Problem(.directoryEmpty, at: Location(file: "h.ldif"), "h.ldif holds no directory entries")),
        ("version: 2\n\ndn: cn=a,dc=x\nmail: a@x\n",
         Problem(.ldifSyntax, at: Location(file: "h.ldif", line: 1), "LDIF version \"2\" is not supported: RFC 2849 defines version 1")),
        // ldapsearch's output of a failed search: its trailer says why; never join.none.
        ("# extended LDIF\n#\n\n# search result\nsearch: 2\nresult: 32 No such object\nmatchedDN: dc=corp,dc=example\n\n# numResponses: 1\n",
         Problem(.directorySearchFailed, at: Location(file: "h.ldif", line: 6),
                 "h.ldif is the output of a search that failed (result: 32 No such object): it holds no directory")),
        // A successful search that found nothing.
        ("# search result\nsearch: 2\nresult: 0 Success\n\n# numResponses: 1\n", Problem(.directoryEmpty, at: Location(file: "h.ldif"), "h.ldif holds no directory entries")),
    ])
    func refusedWhole(ldif: String, problem: Problem) {
        #expect(throws: problem) { try LDIFReader.read(Array(ldif.utf8), file: "h.ldif") }
    }

    @Test("invalid UTF-8 in a value")
    func invalidUTF8() throws {
        let users = try LDIFReader.read(Array("dn: cn=a,dc=x\nmail: caf".utf8) + [0xE9] + Array("\n".utf8), file: "h.ldif")
        #expect(users.problems == [Problem(.ldifInvalidUTF8, at: Location(file: "h.ldif", line: 2), "the value of mail is not valid UTF-8")])
    }

    /// The reader tells a line's ASCII as it finds the line, a word at a time, and checks only
    /// the others: a byte that is not UTF-8 is found at every place in a word, in a folded
    /// line's continuation and in a DN; one after the line's end does not count.
    @Test("invalid UTF-8 found at every place of a line", arguments: 0..<19)
    func invalidUTF8Anywhere(at place: Int) throws {
        let text = Array("abcdefghijklmnopqrs".utf8)
        var bad = text
        bad[place] = 0xE9
        let mail = try LDIFReader.read(Array("dn: cn=a,dc=x\nmail: ".utf8) + bad + Array("\n".utf8), file: "h.ldif")
        #expect(mail.problems == [Problem(.ldifInvalidUTF8, at: Location(file: "h.ldif", line: 2), "the value of mail is not valid UTF-8")])
        // Folded after the bad byte's word, and before it: the continuation is checked too.
        let folded = try LDIFReader.read(Array("dn: cn=a,dc=x\nmail: x\n ".utf8) + bad + Array("\ncn: y\n".utf8), file: "h.ldif")
        #expect(folded.problems == [Problem(.ldifInvalidUTF8, at: Location(file: "h.ldif", line: 2), "the value of mail is not valid UTF-8")])
        let dn = try LDIFReader.read(Array("dn: cn=".utf8) + bad + Array(",dc=x\nmail: a@x\n".utf8), file: "h.ldif")
        #expect(dn.problems == [Problem(.ldifInvalidUTF8, at: Location(file: "h.ldif", line: 1), "the DN is not valid UTF-8")])
        // In base64, the same: the DN is checked whole before its CN and OU are read (unchecked then).
        let encoded = Data(Array("cn=".utf8) + bad + Array(",ou=y,dc=x".utf8)).base64EncodedString()
        let dn64 = try LDIFReader.read(Array("dn:: \(encoded)\nmail: a@x\n".utf8), file: "h.ldif")
        #expect(dn64.problems == [Problem(.ldifInvalidUTF8, at: Location(file: "h.ldif", line: 1), "the DN is not valid UTF-8")])
        #expect(dn64.count == 0)
        // The line before is ASCII, whatever follows its newline in the same word.
        let next = try LDIFReader.read(Array("dn: cn=a,dc=x\nmail: ".utf8) + text[..<place] + Array("\ncn: \u{E9}".utf8) + [0xC3, 0xA9] + Array("\n".utf8), file: "h.ldif")
        #expect(next.problems.isEmpty)
        #expect((next.string(user: 0, .emailAddress) ?? "") == String(decoding: text[..<place], as: UTF8.self))
    }

    /// A line's colon and the first `;` before it, found a word at a time, against a byte loop:
    /// every placement of the two in lines of 0 to 24 bytes, with `:` and `;` after them too.
    @Test("a line's colon and attribute options found at every place")
    func colonAnywhere() {
        for length in 0...24 {
            for colonAt in 0...length {
                for semicolonAt in -1..<length {
                    var line = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                    if semicolonAt >= 0 { line[semicolonAt] = UInt8(ascii: ";") }
                    if colonAt < length { line[colonAt] = UInt8(ascii: ":") }
                    // Past the first colon, more of both: never taken.
                    if colonAt + 2 < length { line[colonAt + 2] = UInt8(ascii: ";") }
                    if colonAt + 3 < length { line[colonAt + 3] = UInt8(ascii: ":") }
                    let colon = line.firstIndex(of: UInt8(ascii: ":")) ?? length
                    let semicolon = line[..<colon].firstIndex(of: UInt8(ascii: ";")) ?? -1
                    let found = line.withView { EntryCollector.colon(in: $0) }
                    #expect(found.colon == colon && found.semicolon == semicolon, "\(String(decoding: line, as: UTF8.self))")
                }
            }
        }
    }

    @Test("the AD-shaped users of the public corpus", .enabled(if: Paths.hasCorpus, "../shared/corpus is absent"))
    func corpus() throws {
        let users = try LDIFReader.load(try #require(Paths.corpusFile("ldif/users/dwimberger-ldap-ad-it/users.ldif")))
        #expect(users.problems.isEmpty, "\(users.problems)")
        // Twelve entries: schema entries, a domain, OUs and a group are passed over; the one person stays.
        #expect(users.count == 1)
        #expect(users.string(user: 0, .dn) == "uid=test,ou=users,dc=wimpi,dc=net")
        #expect(users.string(user: 0, .sAMAccountName) == "test")
        #expect(users.string(user: 0, .cn) == "Test User")
        #expect(users.string(user: 0, .lastName) == "test")
        #expect(users.string(user: 0, .ou) == "users")
    }

    @Test("the join: users found by key, missing users reported with the CSV line, device variables kept")
    func join() throws {
        let inventory = try InventoryTable(bytes: Array("UDID,Email Address,Serial Number,Building\nU1,JANE.DOE@corp.example,S1,HQ\nU2,gone@corp.example,S2,Annex\nU3,,S3,HQ\n".utf8), file: "inv.csv")
        let users = try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif")
        let fleet = Fleet(inventory: inventory, users: users)
        #expect(fleet.matchedCount == 1)
        #expect(fleet.problems.map(\.code.rawValue) == [SourceCode.userNotFound, .userKeyEmpty].map(\.rawValue))
        #expect(fleet.problems.map(\.location) == [Location(file: "inv.csv", line: 3, row: 1, device: "U2"),
                                                   Location(file: "inv.csv", line: 4, row: 2, device: "U3")])
        let plan = try fleet.plan(for: [.user(.cn), .device(.serialNumber), .deviceAttribute("Building"), .device(.imei)])
        func values(_ row: Int) -> [String?] {
            var out = [String?](repeating: nil, count: 4)
            fleet.forEachValue(row: row, plan: plan) { slot, bytes in out[slot] = bytes.map { String(decoding: $0, as: UTF8.self) } }
            return out
        }
        #expect(values(0) == ["Doe, Jane", "S1", "HQ", nil])
        #expect(values(1) == [nil, "S2", "Annex", nil])
        #expect(fleet.source(of: .user(.cn), row: 0).place == "CN=Doe\\, Jane,OU=Field,OU=EMEA,DC=corp,DC=example")
        #expect(fleet.source(of: .user(.cn), row: 0).device == "U1")
        #expect(fleet.source(of: .device(.serialNumber), row: 1) == Location(file: "inv.csv", line: 3, row: 1, device: "U2"))
        #expect(fleet.source(of: .user(.cn), row: 1) == Location(file: "inv.csv", line: 3, row: 1, device: "U2"))
        #expect(throws: Problem(.csvUnknownColumn, at: Location(file: "inv.csv", line: 1), "$(device.Nope): inv.csv has no column \"Nope\"")) {
            try fleet.plan(for: [.deviceAttribute("Nope")])
        }
    }

    @Test("the join's look-ups read ahead: every row's user as one look-up at a time finds it, at any fleet size", arguments: [0, 1, 4, 12, 13, 17, 1_000, 70_000])
    func joinReadsAhead(_ rows: Int) throws {
        var random = SplitMix64(seed: UInt64(rows) + 7)
        var ldif = ""
        for u in 0..<500 { ldif += "dn: cn=u\(u),dc=corp,dc=example\nobjectClass: person\ncn: u\(u)\nmail: u\(u)@corp.example\n\n" }
        let users = try LDIFReader.read(Array(ldif.utf8), file: "u.ldif")
        // Keys of users (some in capitals), of no user, and empty.
        var csv = "UDID,Email Address\n"
        for r in 0..<rows {
            let n = random.next() % 600
            let key = n >= 550 ? "" : n >= 500 ? "nobody\(n)@corp.example" : n % 3 == 0 ? "U\(n)@CORP.example" : "u\(n)@corp.example"
            csv += "D\(r),\(key)\n"
        }
        let inventory = try InventoryTable(bytes: Array(csv.utf8), file: "inv.csv")
        let fleet = Fleet(inventory: inventory, users: users)
        let slot = try #require(inventory.userKeySlot)
        let expected = (0..<rows).map { users.user(forKey: inventory.value(row: $0, slot: slot)) }
        #expect((0..<rows).map(fleet.user(ofRow:)) == expected)
        #expect(fleet.matchedCount == expected.compactMap { $0 }.count)
        #expect(rows < 1_000 || fleet.matchedCount > rows * 3 / 4)
    }

    @Test("a user key in the other Unicode normalization is not joined (bytes compare), but the message says so")
    func normalizationHint() throws {
        let composed = "jos\u{E9}@corp.example", decomposed = "jose\u{301}@corp.example"
        let users = try LDIFReader.read(Array("dn: cn=Jose,dc=corp,dc=example\nobjectClass: person\ncn: Jose\nmail: \(composed)\n\n".utf8), file: "u.ldif")
        let inventory = try InventoryTable(bytes: Array("UDID,Email Address\n00008030-001A2B3C4D5E6F70,\(decomposed)\n".utf8), file: "inv.csv")
        let fleet = Fleet(inventory: inventory, users: users)
        #expect(fleet.matchedCount == 0)
        #expect(fleet.problems.map(\.message) == ["no user has \(decomposed) in the directory (u.ldif); one has it written composed (NFC): "
                                                 + "the same name in other bytes (export both sides in one normalization)"])
    }

    @Test("without a directory, user variables come from the inventory's columns (Jamf School's owner), address parts derived as the directory derives them")
    func userVariablesFromColumns() throws {
        var options = InventoryOptions()
        options.userVariablesFromColumns = true
        options.userColumnMap[.sAMAccountName] = "login"
        let inventory = try InventoryTable(bytes: Array("DeviceUDID,OwnerEmail,Login,OwnerName\nU1,jane.doe@corp.example,jdoe,Jane Doe\nU2,,x,\n".utf8),
                                           file: "inv.csv", options: options)
        let fleet = Fleet(inventory: inventory, users: nil)
        let variables: [Variable] = [.user(.emailAddress), .user(.emailAddressLocalPart), .user(.emailAddressDomain), .user(.userName),
                                     .user(.sAMAccountName), .user(.displayName), .user(.ou)]
        let plan = try fleet.plan(for: variables)
        func values(_ row: Int) -> [String?] {
            var out = [String?](repeating: nil, count: variables.count)
            fleet.forEachValue(row: row, plan: plan) { slot, bytes in out[slot] = bytes.map { String(decoding: $0, as: UTF8.self) } }
            return out
        }
        #expect(values(0) == ["jane.doe@corp.example", "jane.doe", "corp.example", "jane.doe@corp.example", "jdoe", "Jane Doe", nil])
        #expect(values(1) == ["", nil, nil, "", "x", "", nil])
    }

    static let samOnly = (0..<4).map { "dn: cn=u\($0),ou=People,dc=x\nobjectClass: user\nsAMAccountName: u\($0)\nuserPrincipalName: u\($0)@corp.x\n\n" }.joined()

    @Test("a join that finds few users says why, and which attribute would match", arguments: [
        ("UDID,Email Address\nA,u0\nB,u1\nC,u2\nD,u3\n", samOnly, SourceCode.joinNone,
         "0 of 4 devices found their user: the inventory's \"Email Address\" was matched against mail, which 0 of 4 directory users have; "
         + "4 of the inventory's user keys match sAMAccountName: --user-attribute sAMAccountName?"),
        ("UDID,Email Address\nA,u0@corp.x\nB,nobody\nC,none\n", samOnly, SourceCode.joinNone,
         "0 of 3 devices found their user: the inventory's \"Email Address\" was matched against mail, which 0 of 4 directory users have; "
         + "1 of the inventory's user keys match userPrincipalName: --user-attribute userPrincipalName?"),
        ("UDID,Email Address\nA,x1\nB,x2\n", samOnly, SourceCode.joinNone,
         "0 of 2 devices found their user: the inventory's \"Email Address\" was matched against mail, which 0 of 4 directory users have; "
         + "the entries have samaccountname (4), userprincipalname (4)"),
    ])
    func joinDiagnosis(inventory: String, ldif: String, code: SourceCode, message: String) throws {
        // User keys that are not addresses in an "Email Address" column: what the diagnosis is for.
        var options = InventoryOptions()
        options.allowSuspect = true
        let fleet = Fleet(inventory: try InventoryTable(bytes: Array(inventory.utf8), file: "inv.csv", options: options),
                          users: try LDIFReader.read(Array(ldif.utf8), file: "u.ldif"))
        let diagnosis = try #require(fleet.joinDiagnosis())
        #expect(diagnosis.code == code)
        #expect(diagnosis.message == message)
    }

    @Test("a join that finds most users needs no diagnosis")
    func joinHealthy() throws {
        let fleet = Fleet(inventory: try InventoryTable(bytes: Array("UDID,Email Address\nA,jane.doe@corp.example\nB,gone@x\n".utf8), file: "inv.csv"),
                          users: try LDIFReader.read(Array(Self.ldif.utf8), file: "u.ldif"))
        #expect(fleet.matchedCount == 1 && fleet.joinDiagnosis() == nil)
    }
}

@Suite("LDIF read in parts")
struct ParallelLDIFTests {
    /// 20,000 people with folded lines, CRLF and LF, a bad base64 value every 997th entry, a DN
    /// every 1,500th entry that repeats one from the other half of the file, groups and OUs between.
    static let ldif: [UInt8] = {
        var text = "version: 1\n"
        for i in 0..<20_000 {
            let dn = i % 1_500 == 1_499 ? "cn=User \(i - 10_000 < 0 ? i + 5_000 : i - 10_000),ou=People,dc=corp" : "cn=User \(i),ou=People,dc=corp"
            let eol = i % 3 == 0 ? "\r\n" : "\n"
            text += "dn: \(dn)\(eol)objectClass: inetOrgPerson\(eol)uid: u\(i)\(eol)mail: u\(i)@corp.exam\(eol) ple\(eol)"
            if i % 997 == 0 { text += "displayName:: not base64!\(eol)" }
            text += eol
            if i % 4_000 == 0 { text += "dn: ou=Unit \(i),dc=corp\nobjectClass: organizationalUnit\n\n" }
        }
        return Array(text.utf8)
    }()

    @Test("a file read in parts gives the users, their order, lines and problems that one reader gives; joined in pieces of any size",
          arguments: [(2, UserTableBuilder.movedPiece), (3, UserTableBuilder.movedPiece), (7, UserTableBuilder.movedPiece), (2, 4096), (3, 1000), (3, 1)])
    func partsMatchOneReader(parts: Int, piece: Int) throws {
        let one = try LDIFReader.read(Self.ldif, file: "d.ldif", parts: 1)
        let split = try LDIFReader.read(Self.ldif, file: "d.ldif", map: AttributeMap(), parts: parts, poolLimit: UserTableBuilder.poolLimit, movedPiece: piece)
        #expect(one.count == 20_000 - 21 - 13)  // 21 bad base64 values and 13 repeated DNs left out
        #expect(split.count == one.count)
        #expect(split.problems == one.problems)
        #expect(one.problems.filter { $0.code == .ldifDuplicateDN }.count == 13)
        for u in 0..<one.count {
            guard one.string(user: u, .dn) == split.string(user: u, .dn), one.string(user: u, .emailAddress) == split.string(user: u, .emailAddress) else {
                Issue.record("user \(u) differs")
                return
            }
        }
        #expect(one.string(user: 7, .emailAddress) == "u8@corp.example")  // u0 has the bad value
    }

    @Test("a blank line that a continued line follows is not an entry's end, for a reader in parts either (found by the fuzzer)")
    func blankLineContinued() throws {
        // A long first entry puts the middle of the file before cn=v, whose blank line a continued
        // line follows: the first place a reader in two parts could split.
        let long = "dn: cn=long,dc=x\nmail: long@x\n" + String(repeating: "description: filler\n", count: 3_000) + "\n"
        let tail = (0..<5).map { "dn: cn=u\($0),dc=x\nmail: u\($0)@x\n\n" }.joined()
        let bytes = Array((long + "dn: cn=v,dc=x\nmail: v@x\n\n wimpi\nmail: v2@x\n\n" + tail).utf8)
        let one = try LDIFReader.read(bytes, file: "b.ldif")
        let split = try LDIFReader.read(bytes, file: "b.ldif", parts: 2)
        #expect(split.count == one.count && split.problems == one.problems)
        #expect(one.count == 6)  // cn=v is refused: " wimpi" continued its blank line, which is not an attribute line
        #expect(one.problems.map(\.message) == ["expected \"attribute: value\""])
    }

    @Test("parts begin only after an entry: a version line after comments and blank lines is read as one reader reads it")
    func versionAfterComments() throws {
        let lead = String(repeating: "# exported\n\n", count: 200)
        let body = (0..<50).map { "dn: cn=u\($0),dc=x\nmail: u\($0)@x\n\n" }.joined()
        for version in ["1", "2"] {
            let bytes = Array((lead + "version: \(version)\n" + body).utf8)
            let one = Result { () throws(Problem) in try LDIFReader.read(bytes, file: "v.ldif") }
            let parts = Result { () throws(Problem) in try LDIFReader.read(bytes, file: "v.ldif", parts: 4) }
            switch (one, parts) {
            case (.success(let a), .success(let b)): #expect(a.count == 50 && b.count == 50 && a.problems == b.problems)
            case (.failure(let a), .failure(let b)): #expect(a == b && version == "2")
            default: Issue.record("version \(version): \(one) against \(parts)")
            }
        }
    }

    @Test("a file read in windows (entries longer than a window, folded lines, CRLF, a BOM) gives what one reader of its bytes gives",
          arguments: [(1, 64), (1, 1_000), (3, 200), (2, 1 << 20)])
    func windowsMatchOneReader(parts: Int, window: Int) throws {
        let long = "dn: cn=long,dc=x\nobjectClass: person\nmail: long@x\n" + String(repeating: "description: filler\n", count: 200) + "\n"
        let inputs: [[UInt8]] = [
            Self.ldif,
            [0xEF, 0xBB, 0xBF] + Array((long + "dn: cn=v,dc=x\nmail: v@x\n\n wimpi\nmail: v2@x\n\n" + "dn: cn=w,dc=x\nmail: w@x").utf8),
        ]
        let folder = try Paths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (n, bytes) in inputs.enumerated() {
            let path = folder.appendingPathComponent("\(n).ldif").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let one = try LDIFReader.read(bytes, file: path)
            let windowed = try LDIFReader.load(path, parts: parts, window: window)
            #expect(windowed.count == one.count, "input \(n): \(windowed.count) users against \(one.count); \(windowed.problems.map(\.message).prefix(3))")
            guard windowed.count == one.count else { continue }
            #expect(windowed.problems == one.problems)
            for u in 0..<one.count {
                for v in [UserVariable.dn, .cn, .emailAddress, .sAMAccountName] where windowed.string(user: u, v) != one.string(user: u, v) {
                    Issue.record("input \(n), user \(u), \(v): \(String(describing: windowed.string(user: u, v))) against \(String(describing: one.string(user: u, v)))")
                    return
                }
            }
        }
        #expect(try LDIFReader.load(folder.appendingPathComponent("1.ldif").path, window: 64).string(user: 1, .emailAddress) == "w@x")  // the last entry, with no blank line after it
    }
}

/// LDIF base64 values (`attr:: ...`), decoded in place four letters at a time.
@Suite("LDIF base64")
struct Base64Tests {
    /// What the decoder accepts, from Foundation: white space (space, CR, LF) dropped, at most two
    /// `=` and only at the end, the padding left out put back; anything else refused.
    static func decodeByFoundation(_ text: [UInt8]) -> [UInt8]? {
        let letters = text.filter { ![0x20, 0x0D, 0x0A].contains($0) }
        let data = letters.prefix { $0 != 0x3D }
        guard letters.count - data.count <= 2, letters.dropFirst(data.count).allSatisfy({ $0 == 0x3D }), data.count % 4 != 1 else { return nil }
        let padded = String(decoding: data, as: UTF8.self) + String(repeating: "=", count: (4 - data.count % 4) % 4)
        return Data(base64Encoded: padded).map { Array($0) }
    }

    static func decode(_ text: [UInt8]) -> [UInt8]? {
        var copy = text
        return copy.withWorkerSlots { Base64.decodeInPlace($0).map { Array($0.view) } }
    }

    @Test("exact bytes, with white space anywhere, padding, and what is refused", arguments: [
        ("", ""), ("QQ==", "A"), ("QUI=", "AB"), ("QUJD", "ABC"), ("QUJDRA==", "ABCD"),
        ("Sm/DqyDDhXNl", "Jo\u{00EB} \u{00C5}se"), ("QU JD", "ABC"), ("Q\r\nUJDRA\n==", "ABCD"), ("QUJDRA", "ABCD"),
    ])
    func decodes(text: String, expected: String) {
        #expect(Self.decode(Array(text.utf8)) == Array(expected.utf8))
    }

    @Test("not base64: nil", arguments: ["***", "QUJD*", "QQ==QQ==", "QUJDR", "QQ===", "QUJD\tRA=="])
    func refuses(text: String) {
        #expect(Self.decode(Array(text.utf8)) == nil)
    }

    /// 20,000 seeded values: every encoded string (with white space put in at random) decodes to
    /// its bytes, and strings of base64's letters, `=`, white space and junk decode as Foundation does.
    @Test func agreesWithFoundation() {
        var random = SplitMix64(seed: 64)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let others: [UInt8] = [0x3D, 0x20, 0x0D, 0x0A, 0x2A, 0x2D, 0xC3]
        for n in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            var text = Array(Data(bytes).base64EncodedString().utf8)
            for _ in 0..<Int.random(in: 0...3, using: &random) {
                text.insert([0x20, 0x0D, 0x0A][Int.random(in: 0...2, using: &random)], at: Int.random(in: 0...text.count, using: &random))
            }
            #expect(Self.decode(text) == bytes, "input \(n): \(String(decoding: text, as: UTF8.self))")
            let mixed = (0..<Int.random(in: 0...24, using: &random)).map { _ in
                Int.random(in: 0..<10, using: &random) == 0 ? others.randomElement(using: &random)! : alphabet.randomElement(using: &random)!
            }
            #expect(Self.decode(mixed) == Self.decodeByFoundation(mixed), "input \(n): \(String(decoding: mixed, as: UTF8.self))")
        }
    }

    @Test("users' values past what a table's 32-bit offsets reach: input.too-large, in one part or several, never a wrapped offset")
    func poolPastItsLimit() throws {
        let ldif = (0..<40).map { "dn: cn=user\($0),ou=Staff,dc=corp,dc=example\nobjectClass: person\nmail: user\($0)@corp.example\n" }.joined(separator: "\n")
        let bytes = Array(ldif.utf8)
        let fits = try LDIFReader.read(bytes, file: "big.ldif", map: AttributeMap(), parts: 2, poolLimit: 1 << 20)
        #expect(fits.count == 40)
        for parts in [1, 2] {
            let error = #expect(throws: Problem.self) { try LDIFReader.read(bytes, file: "big.ldif", map: AttributeMap(), parts: parts, poolLimit: 1000) }
            #expect(error?.code.rawValue == "input.too-large")
            #expect(error?.message.hasPrefix("big.ldif: the users' values the programs read (DNs and ") == true)
            #expect(error?.message.hasSuffix(" over the 1000 bytes one directory table holds; read the directory in parts (an LDAP filter or an LDIF per region, one run each)") == true, "\(String(describing: error))")
        }
    }
}
