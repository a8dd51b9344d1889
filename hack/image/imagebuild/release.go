package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Charts are released with the image, the CRD chart first.
var Charts = []string{"karpenter-crd", "karpenter"}

// ImageName is the image's repository under the release registry path, as
// upstream publishes its controller next to its charts.
const ImageName = "controller"

// ReleaseOptions say where a release goes.
type ReleaseOptions struct {
	// Root is the repository's root; Layout the image layout to push.
	Root, Layout string
	// Registry is host[:port]/path: the image goes to <Registry>/controller,
	// the charts to oci://<Registry>/karpenter and oci://<Registry>/karpenter-crd.
	Registry string
	// Version tags the image and versions the charts (semantic version).
	Version string
	// Helm is the helm CLI (logged in to the registry with `helm registry
	// login`); HelmEnv extra environment for it. The image push reads the
	// Docker credentials file (~/.docker/config.json, $DOCKER_CONFIG).
	Helm    string
	HelmEnv []string
	// PlainHTTP talks HTTP, not HTTPS, to the registry (a local one); on by
	// default for localhost and 127.0.0.0/8.
	PlainHTTP bool
	Logf      func(format string, args ...any)
}

// Released is what a release pushed.
type Released struct {
	// Image is <Registry>/controller:<Version>@<index digest>, what the chart pins.
	Image  string
	Digest v1.Hash
	// Charts are the chart references pushed (oci://...).
	Charts []string
}

func (o *ReleaseOptions) plainHTTP() bool {
	host := strings.SplitN(o.Registry, "/", 2)[0]
	h := host
	if i := strings.LastIndex(host, ":"); i >= 0 {
		h = host[:i]
	}
	return o.PlainHTTP || h == "localhost" || strings.HasPrefix(h, "127.")
}

// Release pushes the image index (with its platform images and their SBOM
// referrers) and both charts, the karpenter chart's values pinning the image
// by digest. The charts in the repository are not changed: each is copied,
// stamped with the version and (karpenter) the image, packaged and pushed.
func Release(o ReleaseOptions) (*Released, error) {
	if o.Registry == "" {
		return nil, errors.New("no registry (REGISTRY=host/path)")
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	o.Registry = strings.TrimSuffix(strings.TrimPrefix(o.Registry, "oci://"), "/")
	var nameOpts []name.Option
	if o.plainHTTP() {
		nameOpts = append(nameOpts, name.Insecure)
	}
	idx, _, err := Index(o.Layout)
	if err != nil {
		return nil, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return nil, err
	}
	repo := o.Registry + "/" + ImageName
	tag, err := name.NewTag(repo+":"+o.Version, nameOpts...)
	if err != nil {
		return nil, err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := remote.WriteIndex(tag, idx, auth); err != nil {
		return nil, fmt.Errorf("pushing %s: %w", tag, err)
	}
	o.Logf("pushed %s@%s", tag, digest)
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range im.Manifests {
		arts, err := Referrers(o.Layout, m.Digest)
		if err != nil {
			return nil, err
		}
		for _, art := range arts {
			d, err := art.Digest()
			if err != nil {
				return nil, err
			}
			ref, err := name.NewDigest(repo+"@"+d.String(), nameOpts...)
			if err != nil {
				return nil, err
			}
			if err := remote.Write(ref, art, auth); err != nil {
				return nil, fmt.Errorf("pushing the SBOM of %s: %w", m.Digest, err)
			}
			o.Logf("pushed the SBOM of linux/%s: %s", m.Platform.Architecture, ref)
		}
	}
	out := &Released{Image: fmt.Sprintf("%s:%s@%s", repo, o.Version, digest), Digest: digest}
	work, err := os.MkdirTemp("", "karpenter-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	for _, chart := range Charts {
		dir := filepath.Join(work, chart)
		if err := copyDir(filepath.Join(o.Root, "charts", chart), dir); err != nil {
			return nil, err
		}
		if err := StampChart(dir, o.Version, repo, digest.String()); err != nil {
			return nil, err
		}
		if _, err := o.helm("package", dir, "--destination", work); err != nil {
			return nil, err
		}
		pkg := filepath.Join(work, fmt.Sprintf("%s-%s.tgz", chart, strings.TrimPrefix(o.Version, "v")))
		args := []string{"push", pkg, "oci://" + o.Registry}
		if o.plainHTTP() {
			args = append(args, "--plain-http")
		}
		if _, err := o.helm(args...); err != nil {
			return nil, err
		}
		ref := "oci://" + o.Registry + "/" + chart
		o.Logf("pushed %s --version %s", ref, strings.TrimPrefix(o.Version, "v"))
		out.Charts = append(out.Charts, ref)
	}
	return out, nil
}

func (o *ReleaseOptions) helm(args ...string) (string, error) {
	cmd := exec.Command(o.Helm, args...)
	cmd.Env = append(os.Environ(), o.HelmEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

var (
	chartVersionLine = regexp.MustCompile(`(?m)^(version|appVersion): .*$`)
	imageBlock       = regexp.MustCompile(`(?m)^controller:\n  image:\n((?:    .*\n|    #.*\n)+)`)
	imageKey         = regexp.MustCompile(`(?m)^    (repository|tag|digest): .*$`)
)

// StampChart sets a chart copy's version and appVersion (a leading v
// dropped) and, in the karpenter chart, values.yaml's
// controller.image.repository, tag and digest: the default install then runs
// exactly the image released with it.
func StampChart(dir, version, repository, digest string) error {
	v := strings.TrimPrefix(version, "v")
	file := filepath.Join(dir, "Chart.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	b = chartVersionLine.ReplaceAllFunc(b, func(line []byte) []byte {
		key := strings.SplitN(string(line), ":", 2)[0]
		return []byte(key + ": " + v)
	})
	if err := os.WriteFile(file, b, 0o644); err != nil {
		return err
	}
	file = filepath.Join(dir, "values.yaml")
	b, err = os.ReadFile(file)
	if err != nil {
		return err
	}
	loc := imageBlock.FindSubmatchIndex(b)
	if loc == nil {
		if filepath.Base(dir) == "karpenter" {
			return fmt.Errorf("%s: no controller.image block", file)
		}
		return nil
	}
	block := imageKey.ReplaceAllFunc(b[loc[2]:loc[3]], func(line []byte) []byte {
		key := strings.Fields(string(line))[0]
		switch key {
		case "repository:":
			return []byte("    repository: " + repository)
		case "tag:":
			return []byte(fmt.Sprintf("    tag: %q", version))
		default:
			return []byte(fmt.Sprintf("    digest: %q", digest))
		}
	})
	b = append(append(append([]byte{}, b[:loc[2]]...), block...), b[loc[3]:]...)
	return os.WriteFile(file, b, 0o644)
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// Unpack writes the root filesystem of the layout's linux/arch image into
// dest (owners as in the image, which needs root), for an OCI runtime bundle.
func Unpack(layoutDir, arch, dest string) (*v1.ConfigFile, error) {
	idx, _, err := Index(layoutDir)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var img v1.Image
	for _, m := range im.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == arch {
			if img, err = idx.Image(m.Digest); err != nil {
				return nil, err
			}
		}
	}
	if img == nil {
		return nil, fmt.Errorf("%s has no linux/%s image", layoutDir, arch)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dest, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(f, tr)
			f.Close()
			if err != nil {
				return nil, err
			}
		default:
			continue
		}
		if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, os.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			return nil, err
		}
	}
	return img.ConfigFile()
}

func modeBits(m int64) os.FileMode {
	var out os.FileMode
	if m&0o1000 != 0 {
		out |= os.ModeSticky
	}
	return out
}
