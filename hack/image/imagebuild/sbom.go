package imagebuild

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// spdxDoc is the part of SPDX 2.3's JSON form the SBOM uses.
type spdxDoc struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      spdxCreation   `json:"creationInfo"`
	Packages          []spdxPackage  `json:"packages"`
	Relationships     []spdxRelation `json:"relationships"`
}

type spdxCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string       `json:"SPDXID"`
	Name             string       `json:"name"`
	VersionInfo      string       `json:"versionInfo,omitempty"`
	DownloadLocation string       `json:"downloadLocation"`
	FilesAnalyzed    bool         `json:"filesAnalyzed"`
	Checksums        []spdxSum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExtRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string       `json:"primaryPackagePurpose,omitempty"`
	Comment          string       `json:"comment,omitempty"`
}

type spdxSum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExtRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelation struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// SBOM is an SPDX 2.3 JSON document for the linux/arch image: one package
// per binary (with its SHA-256) and one per Go module any of them links,
// read from the binaries' embedded build information (debug/buildinfo), each
// with its purl; the Go toolchain is a package too.
func SBOM(opts Options, arch, dir string) ([]byte, error) {
	doc := spdxDoc{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              fmt.Sprintf("karpenter-%s-linux-%s", opts.Version, arch),
		DocumentNamespace: fmt.Sprintf("%s/sbom/%s/%s/linux-%s", Source, opts.Version, opts.Revision, arch),
		CreationInfo:      spdxCreation{Created: opts.Epoch.UTC().Format(time.RFC3339), Creators: []string{"Tool: " + Module + "/hack/image"}},
	}
	type mod struct{ path, version, sum string }
	mods := map[string]mod{}
	deps := map[string][]string{}
	var goVersion string
	for _, c := range Commands {
		file := filepath.Join(dir, c)
		bi, err := buildinfo.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading the build information of %s: %w", c, err)
		}
		goVersion = bi.GoVersion
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		id := "SPDXRef-Binary-" + c
		doc.Packages = append(doc.Packages, spdxPackage{
			SPDXID: id, Name: "/" + BinDir + "/" + c, VersionInfo: opts.Version, DownloadLocation: Source,
			Checksums:      []spdxSum{{Algorithm: "SHA256", Value: fmt.Sprintf("%x", sha256.Sum256(b))}},
			PrimaryPurpose: "APPLICATION", Comment: "main package " + bi.Path,
		})
		doc.Relationships = append(doc.Relationships, spdxRelation{"SPDXRef-DOCUMENT", "DESCRIBES", id})
		for _, d := range bi.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace
			}
			mods[m.Path+"@"+m.Version] = mod{m.Path, m.Version, m.Sum}
			deps[id] = append(deps[id], m.Path+"@"+m.Version)
		}
	}
	keys := make([]string, 0, len(mods))
	for k := range mods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ids := map[string]string{}
	for i, k := range keys {
		m := mods[k]
		id := fmt.Sprintf("SPDXRef-Module-%d", i)
		ids[k] = id
		p := spdxPackage{
			SPDXID: id, Name: m.path, VersionInfo: m.version, DownloadLocation: "NOASSERTION", PrimaryPurpose: "LIBRARY",
			ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + strings.ToLower(m.path) + "@" + m.version}},
		}
		if m.sum != "" {
			p.Comment = "go.sum " + m.sum
		}
		doc.Packages = append(doc.Packages, p)
	}
	doc.Packages = append(doc.Packages, spdxPackage{
		SPDXID: "SPDXRef-Go", Name: "go", VersionInfo: strings.TrimPrefix(goVersion, "go"), DownloadLocation: "NOASSERTION",
		PrimaryPurpose: "LIBRARY", ExternalRefs: []spdxExtRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/stdlib@" + goVersion}},
	})
	for _, c := range Commands {
		id := "SPDXRef-Binary-" + c
		list := deps[id]
		sort.Strings(list)
		for _, k := range list {
			doc.Relationships = append(doc.Relationships, spdxRelation{id, "DEPENDS_ON", ids[k]})
		}
		doc.Relationships = append(doc.Relationships, spdxRelation{id, "DEPENDS_ON", "SPDXRef-Go"})
	}
	return json.MarshalIndent(doc, "", "  ")
}
