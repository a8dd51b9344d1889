// Command image builds Karpenter's container image (an OCI image index for
// linux/amd64 and linux/arm64) into bin/image/<stamp>/layout, and with
// -release pushes it and the charts to an OCI registry.
//
//	go run ./hack/image                                   # make image
//	go run ./hack/image -release REGISTRY [-version V]    # make release
package main

import (
	"flag"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/karpenter-go/karpenter/hack/image/imagebuild"
)

func main() {
	root := flag.String("root", ".", "repository root")
	release := flag.String("release", "", "push the image and the charts to this registry path (host[:port]/path)")
	version := flag.String("version", "", "version: image tag and chart version (default $VERSION, else the chart's appVersion)")
	helm := flag.String("helm", "bin/helm", "helm CLI for the release")
	plainHTTP := flag.Bool("plain-http", false, "talk HTTP to the registry (always for localhost and 127.0.0.0/8)")
	flag.Parse()
	log.SetFlags(0)
	abs, err := filepath.Abs(*root)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	opts := imagebuild.Options{Root: abs, Version: *version, Logf: log.Printf}
	res, err := imagebuild.Cached(opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("layout   %s\nindex    %s\n", res.Layout, res.Index)
	for _, arch := range imagebuild.Platforms {
		fmt.Printf("%-8s %s\nsbom     %s\n", arch, res.Images[arch], res.SBOMs[arch])
	}
	log.Printf("image ready in %s", time.Since(start).Round(time.Millisecond))
	if *release == "" {
		return
	}
	_ = opts.Defaults()
	helmBin := *helm
	if !filepath.IsAbs(helmBin) {
		helmBin = filepath.Join(abs, helmBin)
	}
	out, err := imagebuild.Release(imagebuild.ReleaseOptions{
		Root: abs, Layout: res.Layout, Registry: *release, Version: opts.Version, Helm: helmBin, PlainHTTP: *plainHTTP,
		Logf: log.Printf,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("image    %s\n", out.Image)
	for _, c := range out.Charts {
		fmt.Printf("chart    %s --version %s\n", c, trimV(opts.Version))
	}
}

func trimV(v string) string {
	if len(v) > 0 && v[0] == 'v' {
		return v[1:]
	}
	return v
}
