package imagebuild_test

import (
	"archive/tar"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	"github.com/karpenter-go/karpenter/pkg/test/kit"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := kit.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The same source, version, revision and time give the same digests: two
// builds into two layouts agree on the index and on every platform image.
func TestBuildTwiceGivesTheSameDigests(t *testing.T) {
	opts := imagebuild.Options{
		Root: root(t), Version: "1.2.3", Revision: "0123456789abcdef0123456789abcdef01234567",
		Epoch: time.Unix(1700000000, 0).UTC(), Logf: t.Logf,
	}
	var results []*imagebuild.Result
	for _, dir := range []string{"a", "b"} {
		o := opts
		o.Out = filepath.Join(t.TempDir(), dir, "layout")
		if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := imagebuild.Build(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("build %s: index %s in %s", dir, res.Index, time.Since(start).Round(time.Millisecond))
		results = append(results, res)
	}
	a, b := results[0], results[1]
	if a.Index != b.Index {
		t.Errorf("index digests differ: %s, %s", a.Index, b.Index)
	}
	for _, arch := range imagebuild.Platforms {
		if a.Images[arch] == (v1.Hash{}) || a.Images[arch] != b.Images[arch] {
			t.Errorf("linux/%s digests differ or are missing: %s, %s", arch, a.Images[arch], b.Images[arch])
		}
		sa, _ := os.ReadFile(a.SBOMs[arch])
		sb, _ := os.ReadFile(b.SBOMs[arch])
		if len(sa) == 0 || string(sa) != string(sb) {
			t.Errorf("linux/%s SBOMs differ or are empty", arch)
		}
	}
	reopened, err := imagebuild.Open(a.Layout)
	if err != nil {
		t.Fatal(err)
	}
	if reopened.Index != a.Index {
		t.Errorf("the layout's index is %s, the build said %s", reopened.Index, a.Index)
	}
	t.Run("image", func(t *testing.T) { checkImage(t, opts, a) })
	t.Run("sbom", func(t *testing.T) { checkSBOM(t, a) })
}

func checkImage(t *testing.T, opts imagebuild.Options, res *imagebuild.Result) {
	idx, _, err := imagebuild.Index(res.Layout)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != "application/vnd.oci.image.index.v1+json" || len(im.Manifests) != 2 {
		t.Fatalf("index %s with %d manifests, want an OCI index of 2", im.MediaType, len(im.Manifests))
	}
	if im.Annotations["org.opencontainers.image.revision"] != opts.Revision {
		t.Errorf("index annotations %v lack the revision", im.Annotations)
	}
	for _, m := range im.Manifests {
		arch := m.Platform.Architecture
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.OS != "linux" || cf.Architecture != arch || m.Platform.OS != "linux" {
			t.Errorf("%s: config platform %s/%s", arch, cf.OS, cf.Architecture)
		}
		if c.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", arch, c.User)
		}
		if strings.Join(c.Entrypoint, " ") != "/usr/local/bin/karpenter" {
			t.Errorf("%s: entrypoint %v", arch, c.Entrypoint)
		}
		want := map[string]string{
			"org.opencontainers.image.source":   "https://github.com/karpenter-go/karpenter",
			"org.opencontainers.image.revision": opts.Revision,
			"org.opencontainers.image.version":  opts.Version,
		}
		for k, v := range want {
			if c.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", arch, k, c.Labels[k], v)
			}
		}
		if !cf.Created.Time.Equal(opts.Epoch) {
			t.Errorf("%s: created %s, want the commit time %s", arch, cf.Created.Time, opts.Epoch)
		}
		files := readFS(t, img, opts.Epoch)
		if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") ||
			!strings.Contains(string(files["etc/group"].data), "nonroot:x:65532:") {
			t.Errorf("%s: passwd/group lack user 65532:\n%s%s", arch, files["etc/passwd"].data, files["etc/group"].data)
		}
		if tmp, ok := files["tmp/"]; !ok || tmp.mode != 0o1777 {
			t.Errorf("%s: /tmp missing or not 1777 (%o)", arch, tmp.mode)
		}
		if n := countCerts(t, files["etc/ssl/certs/ca-certificates.crt"].data); n < 100 {
			t.Errorf("%s: the CA bundle holds %d certificates", arch, n)
		}
		for _, cmd := range imagebuild.Commands {
			f, ok := files["usr/local/bin/"+cmd]
			if !ok || f.mode != 0o755 {
				t.Errorf("%s: /usr/local/bin/%s missing or not executable", arch, cmd)
				continue
			}
			checkStatic(t, arch, cmd, f.data)
		}
	}
}

type file struct {
	data []byte
	mode int64
}

// readFS reads every layer, checking each is in name order and stamped with epoch.
func readFS(t *testing.T, img v1.Image, epoch time.Time) map[string]file {
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]file{}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		var names []string
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, h.Name)
			if !h.ModTime.Equal(epoch) {
				t.Errorf("layer %d: %s has mtime %s, want %s", i, h.Name, h.ModTime, epoch)
			}
			b, _ := io.ReadAll(tr)
			files[h.Name] = file{b, h.Mode}
		}
		rc.Close()
		if !sort.StringsAreSorted(names) {
			t.Errorf("layer %d: entries not sorted: %v", i, names)
		}
	}
	return files
}

func countCerts(t *testing.T, b []byte) int {
	n := 0
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return n
		}
		if _, err := x509.ParseCertificate(blk.Bytes); err != nil {
			t.Errorf("CA bundle: %v", err)
		}
		n++
	}
}

// checkStatic: an ELF of the platform's machine with no interpreter (no dynamic loader).
func checkStatic(t *testing.T, arch, cmd string, data []byte) {
	path := filepath.Join(t.TempDir(), cmd)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s/%s: %v", arch, cmd, err)
	}
	defer f.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("%s/%s: ELF machine %s", arch, cmd, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s/%s: dynamically linked (has an interpreter)", arch, cmd)
		}
	}
}

func checkSBOM(t *testing.T, res *imagebuild.Result) {
	for arch, path := range res.SBOMs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name        string `json:"name"`
				VersionInfo string `json:"versionInfo"`
			} `json:"packages"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		names := map[string]string{}
		for _, p := range doc.Packages {
			names[p.Name] = p.VersionInfo
		}
		if doc.SPDXVersion != "SPDX-2.3" {
			t.Errorf("%s: spdxVersion %q", arch, doc.SPDXVersion)
		}
		for _, want := range []string{"/usr/local/bin/karpenter", "/usr/local/bin/karpenter-convert", "/usr/local/bin/kubectl-karpenter", "k8s.io/client-go", "sigs.k8s.io/controller-runtime", "go"} {
			if names[want] == "" {
				t.Errorf("%s: SBOM lacks %s (with a version)", arch, want)
			}
		}
		// The SBOM is also the layout's referrer of the platform image.
		arts, err := imagebuild.Referrers(res.Layout, res.Images[arch])
		if err != nil {
			t.Fatal(err)
		}
		if len(arts) != 1 {
			t.Fatalf("%s: %d referrers of the image in the layout, want the SBOM", arch, len(arts))
		}
		layers, err := arts[0].Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s: SBOM artifact layers %d, %v", arch, len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != string(b) {
			t.Errorf("%s: the attached SBOM differs from the file", arch)
		}
	}
}
