package imagebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// Cached returns the image layout of bin/image/<stamp>/layout, building it
// when no build of the same stamp (see Stamp) is there: repeated runs on an
// unchanged tree do not rebuild. Builds of older stamps are removed. A lock
// file serialises builders (tests of several packages may ask at once).
func Cached(opts Options) (*Result, error) {
	if err := opts.Defaults(); err != nil {
		return nil, err
	}
	stamp, err := Stamp(opts)
	if err != nil {
		return nil, err
	}
	top := filepath.Join(opts.Root, "bin", "image")
	if err := os.MkdirAll(top, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(top, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	dir := filepath.Join(top, stamp)
	opts.Out = filepath.Join(dir, "layout")
	if res, err := Open(opts.Out); err == nil {
		opts.Logf("image %s: up to date (stamp %s)", res.Index, stamp)
		return res, nil
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	o := opts
	o.Out = filepath.Join(tmp, "layout")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	if _, err := Build(o); err != nil {
		return nil, err
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	entries, _ := os.ReadDir(top)
	for _, e := range entries {
		if e.IsDir() && e.Name() != stamp {
			_ = os.RemoveAll(filepath.Join(top, e.Name()))
		}
	}
	_ = os.Remove(filepath.Join(top, "current"))
	_ = os.Symlink(stamp, filepath.Join(top, "current"))
	return Open(opts.Out)
}

// Open reads a layout Build wrote: the index named by its version, its
// platform images, the SBOM files next to it.
func Open(dir string) (*Result, error) {
	idx, desc, err := Index(dir)
	if err != nil {
		return nil, err
	}
	res := &Result{Layout: dir, Version: desc.Annotations[RefName], Index: desc.Digest, Images: map[string]v1.Hash{}, SBOMs: map[string]string{}}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			continue
		}
		res.Images[m.Platform.Architecture] = m.Digest
		file := filepath.Join(filepath.Dir(dir), "sbom-"+m.Platform.Architecture+".spdx.json")
		if _, err := os.Stat(file); err != nil {
			return nil, err
		}
		res.SBOMs[m.Platform.Architecture] = file
	}
	if len(res.Images) == 0 {
		return nil, fmt.Errorf("%s: the index has no platform images", dir)
	}
	return res, nil
}

// Index is the image index of the layout at dir (the entry carrying a
// version name) and its descriptor there.
func Index(dir string) (v1.ImageIndex, v1.Descriptor, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	for _, m := range im.Manifests {
		if m.MediaType.IsIndex() && m.Annotations[RefName] != "" {
			idx, err := top.ImageIndex(m.Digest)
			return idx, m, err
		}
	}
	return nil, v1.Descriptor{}, fmt.Errorf("%s holds no image index", dir)
}

// Referrers are the layout's artifacts whose subject is the manifest digest
// (the SBOMs of a platform image).
func Referrers(dir string, subject v1.Hash) ([]v1.Image, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []v1.Image
	for _, m := range im.Manifests {
		if !m.MediaType.IsImage() {
			continue
		}
		img, err := top.Image(m.Digest)
		if err != nil {
			return nil, err
		}
		man, err := img.Manifest()
		if err != nil {
			return nil, err
		}
		if man.Subject != nil && man.Subject.Digest == subject {
			out = append(out, img)
		}
	}
	return out, nil
}

// HostArch is the image platform of this machine's architecture.
func HostArch() string {
	return runtime.GOARCH
}
