// The Dockerfile's runtime stage installs exactly the Debian packages of the
// shared libraries the built binary links. Images cannot be built on these
// machines, so this is how a new dependency (or a leftover one) is caught
// before an image would fail to start.
package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"baton/tests/internal/sidecars"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined and comment lines dropped, as Docker reads it.
type instruction struct {
	keyword string // upper case: FROM, RUN, ...
	args    string
}

func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		keyword, args, _ := strings.Cut(line, " ")
		out = append(out, instruction{strings.ToUpper(keyword), strings.TrimSpace(args)})
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // Docker drops comment lines, also inside a continuation
		}
		if body, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), `\`); ok {
			cur.WriteString(body + " ")
			continue
		}
		cur.WriteString(line)
		flush()
	}
	flush()
	return out
}

// finalStage is the instructions from the last FROM on: the image that runs.
func finalStage(ins []instruction) []instruction {
	last := -1
	for i, in := range ins {
		if in.keyword == "FROM" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	return ins[last:]
}

var shellSeparators = regexp.MustCompile(`&&|\|\||;|\|`)

// aptInstalled lists the packages named by `apt-get install` (or `apt
// install`) commands in RUN instructions, without version or architecture
// qualifiers.
func aptInstalled(stage []instruction) []string {
	var pkgs []string
	for _, in := range stage {
		if in.keyword != "RUN" {
			continue
		}
		for _, cmd := range shellSeparators.Split(in.args, -1) {
			fields := strings.Fields(cmd)
			i := slices.IndexFunc(fields, func(f string) bool { return f == "apt-get" || f == "apt" })
			if i < 0 {
				continue
			}
			rest := fields[i+1:]
			j := slices.Index(rest, "install")
			if j < 0 {
				continue
			}
			for _, f := range rest[j+1:] {
				if strings.HasPrefix(f, "-") {
					continue
				}
				f, _, _ = strings.Cut(f, "=")
				f, _, _ = strings.Cut(f, ":")
				pkgs = append(pkgs, f)
			}
		}
	}
	return pkgs
}

// linkedLibraries runs ldd on binary and returns the resolved path of every
// shared library it loads (the vDSO has none). A library ldd cannot find
// fails the test.
func linkedLibraries(t *testing.T, binary string) []string {
	t.Helper()
	out, err := exec.Command("ldd", binary).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", binary, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "linux-vdso") {
			continue
		}
		if strings.Contains(line, "not found") {
			t.Fatalf("ldd: %s", line)
		}
		path := strings.Fields(line)[0] // the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
		if _, after, ok := strings.Cut(line, "=> "); ok {
			path = strings.Fields(after)[0]
		}
		libs = append(libs, path)
	}
	if len(libs) == 0 {
		t.Fatalf("ldd %s reports no libraries:\n%s", binary, out)
	}
	return libs
}

// pathVariants are the names under which dpkg may have recorded path: as
// given, with symlinks resolved, and on the other side of the merged /usr.
func pathVariants(path string) []string {
	v := []string{path}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		v = append(v, real)
	}
	for _, c := range slices.Clone(v) {
		if rest, ok := strings.CutPrefix(c, "/usr/"); ok {
			v = append(v, "/"+rest)
		} else {
			v = append(v, "/usr"+c)
		}
	}
	return v
}

// owningPackages maps each library to the Debian package that installed it,
// with one `dpkg -S` over every variant of every path.
func owningPackages(t *testing.T, libs []string) map[string]string {
	t.Helper()
	var query []string
	for _, lib := range libs {
		query = append(query, pathVariants(lib)...)
	}
	// dpkg -S exits 1 when some variant is unknown; the others are still
	// printed as "pkg[:arch][, pkg2...]: path".
	out, _ := exec.Command("dpkg", append([]string{"-S"}, query...)...).Output()
	owner := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		pkgs, path, ok := strings.Cut(line, ": ")
		if !ok || strings.HasPrefix(line, "diversion ") {
			continue
		}
		pkg, _, _ := strings.Cut(strings.Split(pkgs, ", ")[0], ":")
		owner[path] = pkg
	}
	result := map[string]string{}
	for _, lib := range libs {
		for _, v := range pathVariants(lib) {
			if pkg, ok := owner[v]; ok {
				result[lib] = pkg
				break
			}
		}
		if result[lib] == "" {
			t.Fatalf("no Debian package owns %s (dpkg -S %v)", lib, pathVariants(lib))
		}
	}
	return result
}

// compare returns the needed packages the stage does not install, and the
// installed packages no linked library needs.
func compare(needed map[string][]string, installed []string) (missing, extra []string) {
	for pkg, libs := range needed {
		if !slices.Contains(installed, pkg) {
			missing = append(missing, fmt.Sprintf("%s (for %s)", pkg, strings.Join(libs, ", ")))
		}
	}
	for _, pkg := range installed {
		if _, ok := needed[pkg]; !ok {
			extra = append(extra, pkg)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return missing, extra
}

func readDockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(repo("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfileRuntimeStageInstallsExactlyTheLinkedLibraries(t *testing.T) {
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Fatal("dpkg is required: the build runs on Debian 12")
	}
	needed := map[string][]string{}
	for lib, pkg := range owningPackages(t, linkedLibraries(t, sidecars.BatonBinary(t))) {
		needed[pkg] = append(needed[pkg], filepath.Base(lib))
	}
	for _, libs := range needed {
		sort.Strings(libs)
	}
	installed := aptInstalled(finalStage(parseDockerfile(readDockerfile(t))))
	missing, extra := compare(needed, installed)
	for _, m := range missing {
		t.Errorf("the runtime stage does not install %s: add it to its apt-get install", m)
	}
	for _, e := range extra {
		t.Errorf("the runtime stage installs %s, which no library of the binary comes from: keep the image minimal", e)
	}
	t.Logf("binary links libraries from %d packages", len(needed))
}

func TestDockerfileCheckCatchesAMissingPackage(t *testing.T) {
	// The real Dockerfile with one runtime package removed.
	text := strings.Replace(readDockerfile(t), " libyaml-cpp0.7", "", 1)
	needed := map[string][]string{"libyaml-cpp0.7": {"libyaml-cpp.so.0.7"}, "libc6": {"libc.so.6"}}
	missing, _ := compare(needed, aptInstalled(finalStage(parseDockerfile(text))))
	if !slices.Equal(missing, []string{"libyaml-cpp0.7 (for libyaml-cpp.so.0.7)"}) {
		t.Errorf("missing = %v, want exactly libyaml-cpp0.7", missing)
	}
}

func TestDockerfileParserReadsOnlyTheFinalStage(t *testing.T) {
	text := `FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y libfoo-dev
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
# a comment inside the continuation
      liba1 libb2=1.0-1 libc3:amd64 \
 && rm -rf /var/lib/apt/lists/*
RUN apt install -y libd4; echo done
`
	got := aptInstalled(finalStage(parseDockerfile(text)))
	if want := []string{"liba1", "libb2", "libc3", "libd4"}; !slices.Equal(got, want) {
		t.Errorf("aptInstalled = %v, want %v", got, want)
	}
}

func TestDockerfileRunsTheSidecarAsNonRootWithTheScriptsToolchain(t *testing.T) {
	ins := parseDockerfile(readDockerfile(t))
	final := finalStage(ins)
	if len(final) == 0 || final[0].args != "debian:bookworm-slim" {
		t.Fatalf("final stage %v, want FROM debian:bookworm-slim", final)
	}
	var user, entrypoint string
	for _, in := range final {
		switch in.keyword {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		}
	}
	if !regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*$`).MatchString(user) {
		t.Errorf("USER %q, want a numeric non-root UID:GID (runAsNonRoot can verify only numbers)", user)
	}
	if !regexp.MustCompile(`^\["[^"]*/baton"\]$`).MatchString(entrypoint) {
		t.Errorf("ENTRYPOINT %s, want the exec form running baton (no shell)", entrypoint)
	}
	// The build stage installs what scripts/lib.sh lists and builds as the README says.
	var build strings.Builder
	for _, in := range ins[:len(ins)-len(final)] {
		build.WriteString(in.keyword + " " + in.args + "\n")
	}
	for _, want := range []string{"FROM debian:bookworm ", "scripts/lib.sh && ensure_apt_packages",
		"cmake -S . -B build -G Ninja", "cmake --build build"} {
		if !strings.Contains(build.String(), want) {
			t.Errorf("build stage lacks %q:\n%s", want, build.String())
		}
	}
}
