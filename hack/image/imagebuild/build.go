// Package imagebuild builds Karpenter's container image from this
// repository's source, with no base image: a root filesystem it assembles
// (a non-root user 65532, /tmp, Mozilla's CA bundle) and one layer of static
// binaries, for linux/amd64 and linux/arm64, in an OCI image index written to
// an OCI image layout. The same commit gives the same digests: binaries are
// built with -trimpath and no build ID, tar entries are sorted and stamped
// with the commit time (SOURCE_DATE_EPOCH), and the configs carry that time.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

const (
	// Module is the Go module this repository builds.
	Module = "github.com/karpenter-go/karpenter"
	// Source is the image's org.opencontainers.image.source label.
	Source = "https://" + Module
	// UID and GID run the controller: not root, as the chart's securityContext requires.
	UID = 65532
	// BinDir holds the binaries in the image.
	BinDir = "usr/local/bin"
	// SBOMMediaType is the media type of the SPDX documents attached to each platform image.
	SBOMMediaType = "application/spdx+json"
	// RefName is the layout annotation naming the index by its version.
	RefName = "org.opencontainers.image.ref.name"
)

// Commands are the binaries in the image; the first is its entrypoint.
var Commands = []string{"karpenter", "karpenter-convert", "kubectl-karpenter"}

// Platforms the index carries.
var Platforms = []string{"amd64", "arm64"}

// Options of a build.
type Options struct {
	// Root is the repository's root directory.
	Root string
	// Out is the OCI image layout directory written (replaced if present).
	Out string
	// Version, Revision and Epoch stamp the binaries and the image; see Defaults.
	Version  string
	Revision string
	Epoch    time.Time
	// Arches to build; Platforms when empty.
	Arches []string
	// Logf reports progress; may be nil.
	Logf func(format string, args ...any)
}

// Defaults fills what Options leaves empty: the version from the chart's
// appVersion ($VERSION overrides), the revision from git HEAD ($REVISION),
// the time from the commit's ($SOURCE_DATE_EPOCH), and the platforms.
func (o *Options) Defaults() error {
	if o.Version == "" {
		o.Version = os.Getenv("VERSION")
	}
	if o.Version == "" {
		v, err := ChartAppVersion(o.Root)
		if err != nil {
			return err
		}
		o.Version = v
	}
	if o.Revision == "" {
		o.Revision = os.Getenv("REVISION")
	}
	if o.Revision == "" {
		o.Revision = git(o.Root, "rev-parse", "HEAD")
	}
	if o.Revision == "" {
		o.Revision = "unknown"
	}
	if o.Epoch.IsZero() {
		s := os.Getenv("SOURCE_DATE_EPOCH")
		if s == "" {
			s = git(o.Root, "log", "-1", "--format=%ct")
		}
		sec, _ := strconv.ParseInt(s, 10, 64)
		o.Epoch = time.Unix(sec, 0).UTC()
	}
	if len(o.Arches) == 0 {
		o.Arches = Platforms
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return nil
}

func git(dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// ChartAppVersion is charts/karpenter's appVersion.
func ChartAppVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "charts", "karpenter", "Chart.yaml"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`), nil
		}
	}
	return "", fmt.Errorf("charts/karpenter/Chart.yaml has no appVersion")
}

// Result of a build.
type Result struct {
	Layout string
	// Version names the index in the layout (its tag when pushed).
	Version string
	Index   v1.Hash
	// Images are the platform images' digests by architecture.
	Images map[string]v1.Hash
	// SBOMs are the SPDX documents by architecture (files next to the layout).
	SBOMs map[string]string
}

// Build compiles the binaries for every platform and writes the image index
// (and each platform's SBOM, as a referrer in the layout and as a file
// sbom-<arch>.spdx.json next to it) to opts.Out.
func Build(opts Options) (*Result, error) {
	if err := opts.Defaults(); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "karpenter-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	base, err := baseLayer(opts.Epoch)
	if err != nil {
		return nil, err
	}
	res := &Result{Layout: opts.Out, Version: opts.Version, Images: map[string]v1.Hash{}, SBOMs: map[string]string{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var sboms []v1.Image
	for _, arch := range opts.Arches {
		dir := filepath.Join(work, arch)
		start := time.Now()
		if err := compile(opts, arch, dir); err != nil {
			return nil, err
		}
		opts.Logf("built %s for linux/%s in %s", strings.Join(Commands, ", "), arch, time.Since(start).Round(time.Millisecond))
		img, err := platformImage(opts, arch, base, dir)
		if err != nil {
			return nil, err
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		res.Images[arch] = d
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: arch},
		}})
		doc, err := SBOM(opts, arch, dir)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(filepath.Dir(opts.Out), "sbom-"+arch+".spdx.json")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			return nil, err
		}
		res.SBOMs[arch] = file
		art, err := sbomArtifact(opts, img, doc)
		if err != nil {
			return nil, err
		}
		sboms = append(sboms, art)
	}
	idx = mutate.Annotations(idx, labels(opts)).(v1.ImageIndex)
	if res.Index, err = idx.Digest(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(opts.Out); err != nil {
		return nil, err
	}
	p, err := layout.Write(opts.Out, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: opts.Version})); err != nil {
		return nil, err
	}
	for _, art := range sboms {
		if err := p.AppendImage(art, layout.WithAnnotations(map[string]string{"org.opencontainers.image.title": "sbom"})); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func ldflags(opts Options) string {
	return strings.Join([]string{"-s", "-w", "-buildid=",
		"-X", Module + "/pkg/operator.Version=" + opts.Version,
		"-X", Module + "/pkg/operator.Commit=" + opts.Revision,
	}, " ")
}

// compile builds the static binaries for linux/arch into dir.
func compile(opts Options, arch, dir string) error {
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags(opts), "-o", dir + "/"}
	for _, c := range Commands {
		args = append(args, "./cmd/"+c)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = opts.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (GOARCH=%s): %v\n%s", strings.Join(args, " "), arch, err, out)
	}
	return nil
}

func labels(opts Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.revision": opts.Revision,
		"org.opencontainers.image.version":  opts.Version,
		"org.opencontainers.image.created":  opts.Epoch.Format(time.RFC3339),
		"org.opencontainers.image.title":    "karpenter",
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

func platformImage(opts Options, arch string, base v1.Layer, dir string) (v1.Image, error) {
	bins, err := binaryLayer(opts.Epoch, dir)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	created := v1.Time{Time: opts.Epoch}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: root filesystem (passwd, group, /tmp, CA certificates)"}},
		mutate.Addendum{Layer: bins, MediaType: types.OCILayer, History: v1.History{Created: created, CreatedBy: "hack/image: go build " + strings.Join(Commands, " ")}},
	)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, created
	cf.Config.User = fmt.Sprintf("%d:%d", UID, UID)
	cf.Config.Entrypoint = []string{"/" + BinDir + "/" + Commands[0]}
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"PATH=/" + BinDir + ":/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cf.Config.Labels = labels(opts)
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return img, nil
}

// entry is one file or directory of a layer.
type entry struct {
	name string
	mode int64
	uid  int
	data []byte
	dir  bool
}

// tarLayer writes entries sorted by name, owned as given, stamped with epoch.
func tarLayer(epoch time.Time, entries []entry) (v1.Layer, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// CABundle is Mozilla's root store as Go's golang.org/x/crypto/x509roots
// module carries it (pinned by go.sum), in PEM: the roots that carry no extra
// constraint (a distrust-after date cannot be said in a PEM bundle, so those
// few are left out, as most distributions' bundles leave them out).
func CABundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

func baseLayer(epoch time.Time) (v1.Layer, error) {
	dirs := []string{"etc", "etc/ssl", "etc/ssl/certs", "usr", "usr/local", BinDir, "var", "var/run", "home"}
	var es []entry
	for _, d := range dirs {
		es = append(es, entry{name: d, mode: 0o755, dir: true})
	}
	es = append(es,
		entry{name: "tmp", mode: 0o1777, dir: true},
		entry{name: "home/nonroot", mode: 0o700, uid: UID, dir: true},
		entry{name: "root", mode: 0o700, dir: true},
		entry{name: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil,
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)},
		entry{name: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)},
		entry{name: "etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		entry{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: CABundle()},
	)
	return tarLayer(epoch, es)
}

func binaryLayer(epoch time.Time, dir string) (v1.Layer, error) {
	var es []entry
	for _, c := range Commands {
		b, err := os.ReadFile(filepath.Join(dir, c))
		if err != nil {
			return nil, err
		}
		es = append(es, entry{name: BinDir + "/" + c, mode: 0o755, data: b})
	}
	return tarLayer(epoch, es)
}

// sbomArtifact is an OCI artifact carrying doc whose subject is img: a
// registry's referrers API (or a layout's index) finds it from the image.
func sbomArtifact(opts Options, img v1.Image, doc []byte) (v1.Image, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	sz, err := img.Size()
	if err != nil {
		return nil, err
	}
	art := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	art = mutate.ConfigMediaType(art, SBOMMediaType)
	art, err = mutate.Append(art, mutate.Addendum{Layer: static.NewLayer(doc, SBOMMediaType), MediaType: SBOMMediaType})
	if err != nil {
		return nil, err
	}
	art, err = mutate.CreatedAt(art, v1.Time{Time: opts.Epoch})
	if err != nil {
		return nil, err
	}
	art = mutate.Annotations(art, map[string]string{"org.opencontainers.image.created": opts.Epoch.Format(time.RFC3339)}).(v1.Image)
	return mutate.Subject(art, v1.Descriptor{MediaType: mt, Digest: d, Size: sz}).(v1.Image), nil
}

// Stamp is a digest of everything a build depends on: the Go toolchain, the
// version, revision and time stamped in, and the source (go.mod, go.sum, the
// non-test Go files of cmd/, pkg/ and hack/image/, the CA bundle's module
// version through go.sum).
func Stamp(opts Options) (string, error) {
	if err := opts.Defaults(); err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%d\n%s\n", runtime.Version(), opts.Version, opts.Revision, opts.Epoch.Unix(), strings.Join(opts.Arches, ","))
	files := []string{"go.mod", "go.sum"}
	for _, dir := range []string{"cmd", "pkg", "hack/image"} {
		err := filepath.WalkDir(filepath.Join(opts.Root, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && !strings.HasSuffix(p, "_test.go") && (strings.HasSuffix(p, ".go") || strings.Contains(p, "/embed") || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".json")) {
				rel, _ := filepath.Rel(opts.Root, p)
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(opts.Root, f))
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", f, sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
