// Package release runs scripts/release into a temporary directory and checks
// each artifact as a user would use it: the sums verify, the binary is static,
// reports its version and commit and leads a Lease on the real control plane,
// the chart renders with helm template, install.yaml applies to the API
// server, the Python packages, the C++ archive and the Go module hold what
// they should. It reuses the build directory of $BATON_BIN (else build/), so
// after scripts/test's build it only packages.
package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"baton/tests/internal/cptest"
	"baton/tests/internal/sidecars"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

// treeVersion is the version CMakeLists.txt declares.
func treeVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(cptest.Root(), "CMakeLists.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^project\(baton VERSION ([0-9.]+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CMakeLists.txt declares no project VERSION")
	}
	return string(m[1])
}

// release runs scripts/release VERSION into a temporary dist directory.
func release(t *testing.T, version string) (dist string, out []byte, err error) {
	t.Helper()
	dist = filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command(filepath.Join(cptest.Root(), "scripts", "release"), version)
	cmd.Env = append(os.Environ(), "BATON_DIST="+dist, "BATON_RELEASE_ALLOW_DIRTY=1")
	if dir := os.Getenv("BATON_BIN"); dir != "" {
		cmd.Env = append(cmd.Env, "BATON_BUILD="+filepath.Dir(dir))
	}
	out, err = cmd.CombinedOutput()
	return dist, out, err
}

func TestReleaseRefusesAVersionTheTreeDoesNotDeclare(t *testing.T) {
	_, out, err := release(t, "999.0.0")
	if err == nil || !strings.Contains(string(out), "does not declare version 999.0.0") ||
		!strings.Contains(string(out), "CMakeLists.txt says") {
		t.Errorf("scripts/release 999.0.0: err=%v, want a refusal naming CMakeLists.txt; output:\n%s", err, out)
	}
}

func TestReleaseArtifacts(t *testing.T) {
	version := treeVersion(t)
	start := time.Now()
	dist, out, err := release(t, version)
	if err != nil {
		t.Fatalf("scripts/release %s: %v\n%s", version, err, out)
	}
	t.Logf("scripts/release %s took %v", version, time.Since(start).Round(time.Second))

	binary := filepath.Join(dist, "baton-"+version+"-linux-amd64")
	goZip := filepath.Join(dist, "goproxy", "github.com", "baton-sidecar", "baton", "clients", "go", "@v", "v"+version+".zip")
	want := []string{binary, filepath.Join(dist, "baton-"+version+".tgz"), filepath.Join(dist, "install.yaml"),
		filepath.Join(dist, "baton_client-"+version+"-py3-none-any.whl"),
		filepath.Join(dist, "baton_client-"+version+".tar.gz"),
		filepath.Join(dist, "baton-client-cpp-"+version+".tar.gz"), goZip}

	t.Run("SHA256SUMS", func(t *testing.T) {
		sums := readSums(t, filepath.Join(dist, "SHA256SUMS"))
		for _, path := range want {
			rel, _ := filepath.Rel(dist, path)
			if _, ok := sums[rel]; !ok {
				t.Errorf("SHA256SUMS lacks %s", rel)
			}
		}
		for rel, sum := range sums {
			if got := fileSHA256(t, filepath.Join(dist, rel)); got != sum {
				t.Errorf("%s: sha256 %s, SHA256SUMS says %s", rel, got, sum)
			}
		}
	})

	t.Run("binary", func(t *testing.T) {
		f, err := elf.Open(binary)
		if err != nil {
			t.Fatal(err)
		}
		libs, _ := f.ImportedLibraries()
		interp := slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
		f.Close()
		if len(libs) > 0 || interp {
			t.Errorf("%s is not static: interpreter %v, libraries %v", binary, interp, libs)
		}
		v, err := exec.Command(binary, "--version").Output()
		if err != nil || !strings.HasPrefix(string(v), "baton "+version+" (commit ") {
			t.Errorf("--version: %q, %v; want \"baton %s (commit ...)\"", v, err, version)
		}
		ns := cp.Namespace(t, "release")
		el := sidecars.Election{Kubeconfig: cp.Kubeconfig(), Namespace: ns, Lease: "release"}
		m, err := sidecars.Start(sidecars.Spec{Kind: sidecars.Baton, Binary: binary, Name: "released",
			Election: el, LogDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Kill()
		leader, _ := sidecars.WaitLeader(t, []*sidecars.Member{m}, 30*time.Second)
		if leader != m {
			t.Errorf("the released binary did not lead; log:\n%s", m.Log())
		}
	})

	t.Run("chart", func(t *testing.T) {
		helm, err := exec.Command(filepath.Join(cptest.Root(), "scripts", "helm"), "build").Output()
		if err != nil {
			t.Fatalf("scripts/helm build: %v", err)
		}
		out, err := exec.Command(strings.TrimSpace(string(helm)), "template", "demo",
			filepath.Join(dist, "baton-"+version+".tgz")).CombinedOutput()
		if err != nil {
			t.Fatalf("helm template: %v\n%s", err, out)
		}
		for _, s := range []string{"kind: Deployment", "kind: Role", "baton:" + version} {
			if !strings.Contains(string(out), s) {
				t.Errorf("helm template of the packaged chart lacks %q", s)
			}
		}
	})

	t.Run("install.yaml", func(t *testing.T) {
		manifests, err := os.ReadFile(filepath.Join(dist, "install.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(manifests), "/baton:"+version) {
			t.Errorf("install.yaml does not pin the image to %s", version)
		}
		t.Cleanup(func() { _, _ = cp.Kubectl("", "delete", "namespace", "baton-example", "--wait=false") })
		out := cp.MustKubectl(t, string(manifests), "apply", "-f", "-")
		for _, s := range []string{"namespace/baton-example", "serviceaccount/baton", "role.rbac.authorization.k8s.io/baton",
			"rolebinding.rbac.authorization.k8s.io/baton", "deployment.apps/example-app"} {
			if !strings.Contains(out, s) {
				t.Errorf("kubectl apply -f install.yaml did not create %s:\n%s", s, out)
			}
		}
	})

	t.Run("python", func(t *testing.T) {
		whl := zipNames(t, filepath.Join(dist, "baton_client-"+version+"-py3-none-any.whl"))
		for _, s := range []string{"baton_client/__init__.py", "baton_client/py.typed",
			"baton_client-" + version + ".dist-info/METADATA"} {
			if !slices.Contains(whl, s) {
				t.Errorf("the wheel lacks %s", s)
			}
		}
		sdist := tarNames(t, filepath.Join(dist, "baton_client-"+version+".tar.gz"))
		if !slices.Contains(sdist, "baton_client-"+version+"/pyproject.toml") {
			t.Errorf("the sdist lacks pyproject.toml: %v", sdist)
		}
	})

	t.Run("cpp", func(t *testing.T) {
		names := tarNames(t, filepath.Join(dist, "baton-client-cpp-"+version+".tar.gz"))
		prefix := "baton-client-cpp-" + version + "/"
		for _, s := range []string{"LICENSE", "clients/cpp/CMakeLists.txt", "clients/cpp/include/baton/client/client.h",
			"proto/baton/v1/leader_election.proto"} {
			if !slices.Contains(names, prefix+s) {
				t.Errorf("the C++ archive lacks %s", prefix+s)
			}
		}
	})

	t.Run("go", func(t *testing.T) {
		mv := module.Version{Path: "github.com/baton-sidecar/baton/clients/go", Version: "v" + version}
		files, err := modzip.CheckZip(mv, goZip)
		if err != nil {
			t.Fatalf("the Go module zip is invalid: %v", err)
		}
		if len(files.Omitted) > 0 || len(files.Invalid) > 0 || !slices.Contains(files.Valid, mv.Path+"@"+mv.Version+"/go.mod") {
			t.Errorf("the Go module zip: %d valid files (go.mod among them?), omitted %v, invalid %v",
				len(files.Valid), files.Omitted, files.Invalid)
		}
	})
}

func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", line)
		}
		sums[name] = sum
	}
	return sums
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func zipNames(t *testing.T, path string) []string {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	return names
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}
