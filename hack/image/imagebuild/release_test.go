package imagebuild_test

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
	"github.com/karpenter-go/karpenter/pkg/test/helm"
)

// The release path against an in-process registry: the image index with
// both platforms, their SBOMs as referrers, and both charts, the karpenter
// chart's default image pinned by the index digest (helm show values and
// helm template of the pushed chart say so); the repository's chart is left
// as it was.
func TestReleasePushesTheImageAndTheChartsPinnedByDigest(t *testing.T) {
	r := root(t)
	res, err := imagebuild.Cached(imagebuild.Options{Root: r, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/karpenter-go"
	helmBin, err := helm.Binary()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	before, _ := os.ReadFile(filepath.Join(r, "charts/karpenter/values.yaml"))
	const version = "1.14.0-rc.1"
	out, err := imagebuild.Release(imagebuild.ReleaseOptions{
		Root: r, Layout: res.Layout, Registry: reg, Version: version, Helm: helmBin, Logf: t.Logf,
		HelmEnv: []string{"HELM_CONFIG_HOME=" + home + "/config", "HELM_CACHE_HOME=" + home + "/cache", "HELM_DATA_HOME=" + home + "/data"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantImage := reg + "/controller:" + version + "@" + res.Index.String()
	if out.Image != wantImage {
		t.Errorf("released image %s, want %s", out.Image, wantImage)
	}
	if after, _ := os.ReadFile(filepath.Join(r, "charts/karpenter/values.yaml")); string(after) != string(before) {
		t.Errorf("the release changed charts/karpenter/values.yaml in the repository")
	}

	// The registry holds the index and both platform images, each with its SBOM.
	ref, err := name.ParseReference(reg + "/controller:" + version)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(ref)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d != res.Index {
		t.Errorf("the registry's index is %s, the build's %s", d, res.Index)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	platforms := map[string]bool{}
	for _, m := range im.Manifests {
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.Layers(); err != nil {
			t.Fatal(err)
		}
		platforms[cf.OS+"/"+cf.Architecture] = true
		refs, err := remote.Referrers(ref.Context().Digest(m.Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		rm, _ := refs.IndexManifest()
		if len(rm.Manifests) != 1 || rm.Manifests[0].ArtifactType != imagebuild.SBOMMediaType {
			t.Errorf("%s: referrers %+v, want its SBOM", cf.Architecture, rm.Manifests)
		}
	}
	if !platforms["linux/amd64"] || !platforms["linux/arm64"] || len(platforms) != 2 {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	// helm reads the pushed charts back.
	chart := "oci://" + reg + "/karpenter"
	values, err := helm.Run("show", "values", chart, "--version", version, "--plain-http")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Controller struct {
			Image struct{ Repository, Tag, Digest string }
		}
	}
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	if got := v.Controller.Image; got.Repository != reg+"/controller" || got.Tag != version || got.Digest != res.Index.String() {
		t.Errorf("pushed chart's controller.image %+v, want %s/controller, %s, %s", got, reg, version, res.Index)
	}
	manifest, err := helm.Run("template", "karpenter", chart, "--version", version, "--plain-http", "--namespace", "kube-system", "--set", "settings.clusterName=test")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(manifest, "image: "+wantImage+"\n") {
		t.Errorf("helm template of the pushed chart does not run %s", wantImage)
	}
	crds, err := helm.Run("show", "chart", "oci://"+reg+"/karpenter-crd", "--version", version, "--plain-http")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(crds, "appVersion: "+version) {
		t.Errorf("pushed karpenter-crd chart:\n%s", crds)
	}
}
