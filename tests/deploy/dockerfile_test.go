// The Dockerfile's runtime stage is the static binary on an empty base. Images
// cannot be built on these machines, so these tests check what such an image
// needs: that the built binary loads no shared library, that the stage copies
// it and nothing else, and that it runs in a root directory holding only that
// file, as the image's user.
package deploy

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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

// runtimeStage is what the final stage of the Dockerfile makes of the image.
type runtimeStage struct {
	base       string   // FROM
	copies     []string // args of each COPY or ADD, single-spaced
	runs       []string // args of each RUN
	user       string
	entrypoint string
}

func readRuntimeStage(stage []instruction) runtimeStage {
	var r runtimeStage
	for _, in := range stage {
		switch in.keyword {
		case "FROM":
			r.base = in.args
		case "COPY", "ADD":
			r.copies = append(r.copies, strings.Join(strings.Fields(in.args), " "))
		case "RUN":
			r.runs = append(r.runs, in.args)
		case "USER":
			r.user = in.args
		case "ENTRYPOINT":
			r.entrypoint = in.args
		}
	}
	return r
}

// requireStatic fails the test unless binary is an ELF executable an empty
// image can run: no program interpreter (ld.so) and no shared library.
func requireStatic(t *testing.T, binary string) {
	t.Helper()
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: it is dynamically linked (configure with -DBATON_STATIC=ON)", binary)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v, which an image FROM scratch lacks", binary, libs)
	}
}

var copyOfTheBinary = regexp.MustCompile(`^--from=build (/opt/baton/bin/baton) (/[^ ]+)$`)

func TestDockerfileRuntimeStageIsTheStaticBinaryAlone(t *testing.T) {
	requireStatic(t, sidecars.BatonBinary(t))
	r := readRuntimeStage(finalStage(parseDockerfile(readDockerfile(t))))
	if r.base != "scratch" {
		t.Errorf("runtime stage FROM %s, want scratch: the binary needs no file beside it", r.base)
	}
	if len(r.runs) > 0 {
		t.Errorf("runtime stage runs %q: an empty base has no shell", r.runs)
	}
	if len(r.copies) != 1 || !copyOfTheBinary.MatchString(r.copies[0]) {
		t.Fatalf("runtime stage copies %q, want exactly the built binary (COPY --from=build /opt/baton/bin/baton /PATH)", r.copies)
	}
	dst := copyOfTheBinary.FindStringSubmatch(r.copies[0])[2]
	if want := `["` + dst + `"]`; r.entrypoint != want {
		t.Errorf("ENTRYPOINT %s, want %s: the exec form running the copied binary (no shell)", r.entrypoint, want)
	}
	if r.user != "65532:65532" {
		t.Errorf("USER %q, want 65532:65532 (numeric, so runAsNonRoot can verify it; deploy/ uses the same)", r.user)
	}
}

// The image's file system is the binary alone: run it so, in a root directory
// holding nothing else, as UID/GID 65532, and ask its version.
func TestStaticBinaryRunsInAnEmptyRootAsTheImageUser(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sidecars.BatonBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "baton"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/baton", "--version")
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("/baton --version in an empty root as 65532: %v: %s", err, out)
	}
	if !regexp.MustCompile(`^baton [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\)\n$`).Match(out) {
		t.Errorf("--version printed %q, want \"baton VERSION (commit COMMIT)\"", out)
	}
}

func readDockerfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(repo("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDockerfileParserReadsOnlyTheFinalStage(t *testing.T) {
	text := `FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y libfoo-dev
COPY . .
FROM scratch
COPY --from=build \
# a comment inside the continuation
  /opt/baton/bin/baton /baton
USER 65532:65532
ENTRYPOINT ["/baton"]
`
	r := readRuntimeStage(finalStage(parseDockerfile(text)))
	if r.base != "scratch" || len(r.runs) != 0 || len(r.copies) != 1 ||
		r.copies[0] != "--from=build /opt/baton/bin/baton /baton" || r.user != "65532:65532" ||
		r.entrypoint != `["/baton"]` {
		t.Errorf("runtime stage read as %+v", r)
	}
}

func TestDockerfileBuildStageUsesTheScriptsToolchain(t *testing.T) {
	ins := parseDockerfile(readDockerfile(t))
	final := finalStage(ins)
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
