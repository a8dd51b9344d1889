// Command upstreammetrics lists the Prometheus metric families upstream
// Karpenter registers (core, the AWS provider, operatorpkg and the AWS SDK
// metrics library) with their type and label names, read from the upstream
// sources in the Go module cache, and writes them as JSON. The parity test in
// pkg/metrics/parity compares the families this binary registers against that
// list.
//
// Usage:
//
//	go run ./hack/upstreammetrics \
//	  -core  $GOMODCACHE/sigs.k8s.io/karpenter@v1.15.0 \
//	  -aws   $GOMODCACHE/github.com/aws/karpenter-provider-aws@v1.15.2 \
//	  -operatorpkg $GOMODCACHE/github.com/awslabs/operatorpkg@<version> \
//	  -awssdkprom  $GOMODCACHE/github.com/jonathan-innis/aws-sdk-go-prometheus@v0.1.1 \
//	  -o pkg/metrics/parity/testdata/upstream_metrics.json
//
// The reading is syntactic: every call whose arguments hold a
// prometheus.{Counter,Gauge,Histogram,Summary}Opts literal declares a family;
// its name is Namespace_Subsystem_Name with each part resolved through string
// constants of any of the scanned packages, and its labels are the argument
// after the options (a []string or []metrics.Label literal, a label variable,
// a function of the same package returning one, or append of those). Label
// lists that upstream computes at run time (the node gauges' well-known node
// labels) are recorded as the static part plus a marker. operatorpkg's status
// condition families are templates over the object kind: they are listed once
// without a kind (with group and kind labels) and once per kind upstream
// passes to status.NewController, with the extra labels it asks for.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Family is one upstream metric family.
type Family struct {
	Name   string   `json:"name"`
	Type   string   `json:"type"`
	Labels []string `json:"labels"`
	// Dynamic is set when upstream adds labels computed at run time to Labels.
	Dynamic string `json:"dynamic,omitempty"`
	// Source is the module and file declaring the family.
	Source string `json:"source"`
	// Gate names the feature gate the family's controller needs, if any.
	Gate string `json:"gate,omitempty"`
}

type module struct {
	path, dir string
}

// pkgInfo is what the scan keeps of one package: its string constants and
// label variables, and its function declarations.
type pkgInfo struct {
	consts map[string]ast.Expr
	funcs  map[string]*ast.FuncDecl
	files  []*parsedFile
}

type parsedFile struct {
	rel     string
	module  string
	pkg     string
	f       *ast.File
	imports map[string]string // local name -> import path
}

type scanner struct {
	fset *token.FileSet
	pkgs map[string]*pkgInfo // import path -> package
}

func main() {
	core := flag.String("core", "", "upstream sigs.k8s.io/karpenter module directory")
	aws := flag.String("aws", "", "upstream github.com/aws/karpenter-provider-aws module directory")
	opkg := flag.String("operatorpkg", "", "github.com/awslabs/operatorpkg module directory (the version core pins)")
	sdk := flag.String("awssdkprom", "", "github.com/jonathan-innis/aws-sdk-go-prometheus module directory (the version the AWS provider pins)")
	out := flag.String("o", "", "output file (stdout when empty)")
	flag.Parse()
	if *core == "" || *aws == "" || *opkg == "" || *sdk == "" {
		log.Fatal("-core, -aws, -operatorpkg and -awssdkprom are required")
	}
	s := &scanner{fset: token.NewFileSet(), pkgs: map[string]*pkgInfo{}}
	mods := []module{
		{"sigs.k8s.io/karpenter", *core},
		{"github.com/aws/karpenter-provider-aws", *aws},
		{"github.com/awslabs/operatorpkg", *opkg},
		{"github.com/jonathan-innis/aws-sdk-go-prometheus", *sdk},
	}
	for _, m := range mods {
		if err := s.load(m); err != nil {
			log.Fatal(err)
		}
	}
	// operatorpkg's packages count only when Karpenter imports them (its
	// events package, with per-kind event counters, is not used).
	imported := map[string]bool{}
	for _, pi := range s.pkgs {
		for _, pf := range pi.files {
			if pf.module == mods[0].path || pf.module == mods[1].path {
				for _, p := range pf.imports {
					imported[p] = true
				}
			}
		}
	}
	var fams []Family
	for _, p := range sortedKeys(s.pkgs) {
		if strings.HasPrefix(p, mods[2].path) && !imported[p] {
			continue
		}
		for _, pf := range s.pkgs[p].files {
			fams = append(fams, s.families(pf)...)
		}
	}
	fams = expandStatusTemplates(fams, s, *core, *aws)
	sort.Slice(fams, func(i, j int) bool { return fams[i].Name < fams[j].Name })
	seen := map[string]bool{}
	var uniq []Family
	for _, f := range fams {
		if !seen[f.Name] {
			seen[f.Name] = true
			uniq = append(uniq, f)
		}
	}
	b, err := json.MarshalIndent(uniq, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	b = append(b, '\n')
	if *out == "" {
		os.Stdout.Write(b)
		return
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// load parses the module's non-test Go files outside test helpers and
// vendored code.
func (s *scanner) load(m module) error {
	return filepath.WalkDir(m.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(m.dir, path)
		if d.IsDir() {
			base := d.Name()
			if base == "vendor" || base == "testdata" || base == "test" || base == "fake" || base == "hack" || base == "tools" || base == "website" || base == "designs" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(s.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		imp := filepath.ToSlash(filepath.Dir(rel))
		ipath := m.path
		if imp != "." {
			ipath += "/" + imp
		}
		pf := &parsedFile{rel: filepath.ToSlash(rel), module: m.path, pkg: ipath, f: f, imports: map[string]string{}}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if regexp.MustCompile(`^v[0-9]+$`).MatchString(name) && strings.Contains(p, "/") {
				// a major-version suffix: the package name is the element before
				// for modules like aws-sdk-go-prometheus/v2, but API packages
				// named v1 keep it; only the import alias matters below.
				name = p[strings.LastIndex(p, "/")+1:]
			}
			if is.Name != nil {
				name = is.Name.Name
			}
			pf.imports[name] = p
		}
		pi := s.pkgs[ipath]
		if pi == nil {
			pi = &pkgInfo{consts: map[string]ast.Expr{}, funcs: map[string]*ast.FuncDecl{}}
			s.pkgs[ipath] = pi
		}
		pi.files = append(pi.files, pf)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				if d.Tok != token.CONST && d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							pi.consts[n.Name] = vs.Values[i]
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil {
					pi.funcs[d.Name.Name] = d
				}
			}
		}
		return nil
	})
}

var optsTypes = map[string]string{
	"CounterOpts":   "counter",
	"GaugeOpts":     "gauge",
	"HistogramOpts": "histogram",
	"SummaryOpts":   "summary",
}

// families returns the families declared in one file.
func (s *scanner) families(pf *parsedFile) []Family {
	var out []Family
	var fn string // the enclosing function declaration
	ast.Inspect(pf.f, func(n ast.Node) bool {
		if fd, ok := n.(*ast.FuncDecl); ok {
			fn = fd.Name.Name
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		for i, arg := range call.Args {
			cl, ok := arg.(*ast.CompositeLit)
			if !ok {
				continue
			}
			sel, ok := cl.Type.(*ast.SelectorExpr)
			if !ok || optsTypes[sel.Sel.Name] == "" {
				continue
			}
			if x, ok := sel.X.(*ast.Ident); !ok || pf.imports[x.Name] != "github.com/prometheus/client_golang/prometheus" {
				continue
			}
			fam := Family{Type: optsTypes[sel.Sel.Name], Source: pf.module + ": " + pf.rel}
			var parts [3]string
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key := kv.Key.(*ast.Ident).Name
				idx := map[string]int{"Namespace": 0, "Subsystem": 1, "Name": 2}
				if j, ok := idx[key]; ok {
					v, ok := s.str(pf, kv.Value)
					if !ok {
						v = templateSubsystem(fn)
					}
					parts[j] = v
				}
			}
			var nonEmpty []string
			for _, p := range parts {
				if p != "" {
					nonEmpty = append(nonEmpty, p)
				}
			}
			fam.Name = strings.Join(nonEmpty, "_")
			if i+1 < len(call.Args) {
				fam.Labels, fam.Dynamic = s.labels(pf, call.Args[i+1], 0)
			} else if enclosing := s.enclosingLabels(pf, call); enclosing != nil {
				fam.Labels = enclosing
			}
			if fam.Labels == nil {
				fam.Labels = []string{}
			}
			out = append(out, fam)
		}
		return true
	})
	return out
}

// templateSubsystem is the subsystem operatorpkg's per-kind metric
// constructors compute from the object kind: {kind}_termination for the
// termination families, {kind}_status_condition for the others.
func templateSubsystem(fn string) string {
	if strings.HasPrefix(fn, "termination") {
		return "{kind}_termination"
	}
	return "{kind}_status_condition"
}

// enclosingLabels handles prometheus.NewXVec(opts, labels) whose labels are
// not the argument after the options (not used upstream today).
func (s *scanner) enclosingLabels(*parsedFile, *ast.CallExpr) []string { return nil }

// resolve finds the declaration of an identifier or pkg.Ident selector.
func (s *scanner) resolve(pf *parsedFile, e ast.Expr) (*parsedFile, ast.Expr, bool) {
	switch x := e.(type) {
	case *ast.Ident:
		pi := s.pkgs[pf.pkg]
		if v, ok := pi.consts[x.Name]; ok {
			return s.fileOf(pf.pkg, x.Name), v, true
		}
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return nil, nil, false
		}
		ipath := pf.imports[id.Name]
		pi := s.pkgs[ipath]
		if pi == nil {
			return nil, nil, false
		}
		if v, ok := pi.consts[x.Sel.Name]; ok {
			return s.fileOf(ipath, x.Sel.Name), v, true
		}
	}
	return nil, nil, false
}

// fileOf returns the file of package ipath that declares name (its imports
// resolve the declaration's own selectors).
func (s *scanner) fileOf(ipath, name string) *parsedFile {
	for _, f := range s.pkgs[ipath].files {
		for _, decl := range f.f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				if vs, ok := spec.(*ast.ValueSpec); ok {
					for _, n := range vs.Names {
						if n.Name == name {
							return f
						}
					}
				}
			}
		}
	}
	return s.pkgs[ipath].files[0]
}

// str evaluates a string expression: literals, constants, concatenation,
// string(x) conversions and label variables (their Name).
func (s *scanner) str(pf *parsedFile, e ast.Expr) (string, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			v, err := strconv.Unquote(x.Value)
			return v, err == nil
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, ok1 := s.str(pf, x.X)
			b, ok2 := s.str(pf, x.Y)
			return a + b, ok1 && ok2
		}
	case *ast.CallExpr:
		if id, ok := x.Fun.(*ast.Ident); ok && id.Name == "string" && len(x.Args) == 1 {
			return s.str(pf, x.Args[0])
		}
	case *ast.CompositeLit:
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
					return s.str(pf, kv.Value)
				}
			}
		}
	case *ast.Ident, *ast.SelectorExpr:
		if df, v, ok := s.resolve(pf, x); ok {
			return s.str(df, v)
		}
	}
	return "", false
}

// labels evaluates a label list expression. dynamic describes parts computed
// at run time.
func (s *scanner) labels(pf *parsedFile, e ast.Expr, depth int) ([]string, string) {
	if depth > 5 {
		return nil, "unresolved"
	}
	switch x := e.(type) {
	case *ast.CompositeLit:
		if _, isList := x.Type.(*ast.ArrayType); !isList {
			if v, ok := s.str(pf, x); ok {
				return []string{v}, ""
			}
			return nil, "unresolved"
		}
		var out []string
		dyn := ""
		for _, el := range x.Elts {
			v, ok := s.str(pf, el)
			if !ok {
				dyn = "unresolved"
				continue
			}
			out = append(out, v)
		}
		if out == nil {
			out = []string{}
		}
		return out, dyn
	case *ast.Ident, *ast.SelectorExpr:
		if df, v, ok := s.resolve(pf, x); ok {
			return s.labels(df, v, depth+1)
		}
		if id, ok := x.(*ast.Ident); ok && id.Name == "additionalLabels" {
			return nil, "{extra}"
		}
	case *ast.CallExpr:
		switch fn := x.Fun.(type) {
		case *ast.Ident:
			if fn.Name == "append" {
				var out []string
				var dyn []string
				for _, a := range x.Args {
					ls, d := s.labels(pf, a, depth+1)
					if ls == nil && d == "" {
						if v, ok := s.str(pf, a); ok {
							ls = []string{v}
						}
					}
					out = append(out, ls...)
					if d != "" {
						dyn = append(dyn, d)
					}
				}
				return out, strings.Join(dyn, ",")
			}
			if fd, ok := s.pkgs[pf.pkg].funcs[fn.Name]; ok && len(x.Args) == 0 {
				for _, st := range fd.Body.List {
					if r, ok := st.(*ast.ReturnStmt); ok && len(r.Results) == 1 {
						return s.labels(s.funcFile(pf.pkg, fd), r.Results[0], depth+1)
					}
				}
			}
		case *ast.SelectorExpr:
			if id, ok := fn.X.(*ast.Ident); ok && id.Name == "lo" && fn.Sel.Name == "Map" {
				return nil, "well-known node labels"
			}
		}
	}
	return nil, "unresolved"
}

func (s *scanner) funcFile(ipath string, fd *ast.FuncDecl) *parsedFile {
	for _, f := range s.pkgs[ipath].files {
		for _, d := range f.f.Decls {
			if d == fd {
				return f
			}
		}
	}
	return nil
}

// statusKind is one status.NewController / NewGenericObjectController call
// upstream makes: the object kind and the extra metric labels.
type statusKind struct {
	kind   string
	labels []string
	gate   string
	source string
}

var statusCall = regexp.MustCompile(`status\.New(?:GenericObject)?Controller\[\*[A-Za-z0-9_]+\.([A-Za-z0-9_]+)\]`)

// expandStatusTemplates replaces operatorpkg's per-kind template families by
// the kind-less families (labels group and kind, emitted by every controller
// built with EmitDeprecatedMetrics) and one family per kind upstream watches.
func expandStatusTemplates(fams []Family, s *scanner, coreDir, awsDir string) []Family {
	kinds := findStatusKinds(coreDir, "sigs.k8s.io/karpenter")
	kinds = append(kinds, findStatusKinds(awsDir, "github.com/aws/karpenter-provider-aws")...)
	var out []Family
	for _, f := range fams {
		if !strings.Contains(f.Name, "{kind}_") {
			out = append(out, f)
			continue
		}
		// The kind-less family is what the package-level variables register
		// (objectName "", extra labels group and kind).
		base := f.Name
		kindless := f
		kindless.Name = strings.Replace(base, "{kind}_", "", 1)
		kindless.Labels = append(append([]string{}, f.Labels...), "group", "kind")
		kindless.Dynamic = ""
		out = append(out, kindless)
		for _, k := range kinds {
			kf := f
			kf.Name = strings.Replace(base, "{kind}", strings.ToLower(k.kind), 1)
			kf.Labels = append(append([]string{}, f.Labels...), k.labels...)
			kf.Dynamic = ""
			kf.Gate = k.gate
			kf.Source = f.Source + " (" + k.source + ")"
			out = append(out, kf)
		}
	}
	return out
}

// findStatusKinds reads the kinds a module passes to operatorpkg's status
// controller. The extra labels are upstream's WithLabels arguments: the
// NodeClass label keys of the cloud provider (the AWS provider's one NodeClass,
// karpenter.k8s.aws/ec2nodeclass), the NodePool label and, for Nodes,
// karpenter.sh/initialized, as Prometheus label names.
func findStatusKinds(dir, modPath string) []statusKind {
	var out []statusKind
	_ = filepath.WalkDir(filepath.Join(dir, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		rel, _ := filepath.Rel(dir, path)
		for _, m := range statusCall.FindAllStringSubmatchIndex(src, -1) {
			kind := src[m[2]:m[3]]
			// the call's options run to the next controller or the end of
			// the enclosing list
			rest := src[m[1]:]
			if next := statusCall.FindStringIndex(rest); next != nil {
				rest = rest[:next[0]]
			}
			k := statusKind{kind: kind, source: modPath + ": " + filepath.ToSlash(rel)}
			if strings.Contains(rest, "WithLabels(") {
				k.labels = append(k.labels, "karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool")
				if strings.Contains(rest, "NodeInitializedLabelKey") {
					k.labels = append(k.labels, "karpenter_sh_initialized")
				}
			}
			// a feature gate tested in the few lines before the call
			before := src[max(0, m[0]-800):m[0]]
			if g := regexp.MustCompile(`FeatureGates\.([A-Za-z]+)`).FindAllStringSubmatch(before, -1); g != nil {
				k.gate = g[len(g)-1][1]
			}
			out = append(out, k)
		}
		return nil
	})
	return out
}
