package cli

import (
	"bytes"
	"debug/buildinfo"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/cmd/creative/internal/batchcmd"
	"github.com/creativegen/creative-go/cmd/creative/internal/cmdutil"
)

// runLight runs the command in process as creative does: it opens no
// bucket URL, and hands a command that names one to handOver.
func runLight(t *testing.T, env map[string]string, handOver func() error, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	a := &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, handOver: handOver}
	code := a.run(args)
	return code, stdout.String(), stderr.String()
}

func TestACommandThatNamesABucketIsHandedOverBeforeAnything(t *testing.T) {
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 2)
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"batch", jobs, "--out", "mem://x"},
		{"--fake", "batch", jobs, "--out", "s3://b/out?region=eu-west-1"},
		{"batch", "gs://b/jobs.jsonl", "--out", out},
		{"batch", "--dry-run", "azblob://c/jobs.jsonl"},
		{"batch", "--dry-run", jobs, "--out", "mem://"},
		{"batch", "status", "--out", "mem://"},
		{"-v", "batch", "--out=s3://b/o", jobs, "--concurrency", "0", "--shard", "9/2"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			handed := 0
			code, stdout, stderr := runLight(t, env, func() error { handed++; return &exitStatus{7} }, args...)
			assert.Equal(t, 1, handed, "handed over once")
			assert.Equal(t, 7, code, "creative-cloud's status")
			assert.Empty(t, stdout)
			assert.Empty(t, stderr, "creative-cloud prints it all")

			code, stdout, stderr = runLight(t, env, nil, args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "creative: bucket URLs need creative-cloud beside creative or on PATH: go install ./cmd/creative/... (from a clone) installs both\n", stderr)
			assert.NoDirExists(t, out, "nothing created")
			assert.Empty(t, srv.Requests(), "nothing sent")
		})
	}
}

func TestACommandThatNamesNoBucketRunsInCreative(t *testing.T) {
	srv, env := fakeEnv(t)
	watchPrompts(srv)
	jobs := writeJobs(t, 2)
	dir := t.TempDir()
	out, fileOut := filepath.Join(dir, "out"), filepath.Join(dir, "file-out")
	fileURL := func(p string) string { return "file://" + filepath.ToSlash(p) }
	handOver := func() error { t.Error("handed over"); return &exitStatus{7} }
	for _, tt := range []struct {
		args []string
		want string // on stdout or stderr
	}{
		{[]string{"--version"}, "creative  "},
		{[]string{"help"}, "Areas:"},
		{[]string{"__complete", "image", ""}, "text-to-image"},
		{[]string{"__complete", "batch", "--out", "s3://b/"}, ":"},
		{[]string{"batch", "fields", "audio/enhance"}, "audio/enhance"},
		{[]string{"batch", jobs, "--out", out}, "2 done"},
		{[]string{"batch", "status", "--out", out}, "2 jobs in the ledger"},
		// A file:// URL names a folder or a jobs file on this machine.
		{[]string{"batch", fileURL(jobs), "--out", fileURL(fileOut)}, "2 done"},
		{[]string{"batch", fileURL(jobs), "--dry-run", "--out", fileURL(fileOut)}, "2 done already"},
		{[]string{"batch", "status", "--out", fileURL(fileOut)}, "2 jobs in the ledger"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runLight(t, env, handOver, tt.args...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stdout+stderr, tt.want)
		})
	}
	assert.FileExists(t, filepath.Join(fileOut, batchcmd.ResultsFile))
}

func TestHandOffVersionTellsCommitsApartNotToolchains(t *testing.T) {
	bi := func(version, goVersion string, kv ...string) *debug.BuildInfo {
		b := &debug.BuildInfo{GoVersion: goVersion, Main: debug.Module{Version: version}}
		for i := 0; i < len(kv); i += 2 {
			b.Settings = append(b.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return b
	}
	const rev1, rev2 = "3e30735a9c1d4e0f8b2a6c7d5e4f3a2b1c0d9e8f", "9f1d2c3b4a5e6f708192a3b4c5d6e7f8091a2b3c"
	const tree = "0123456789ab"
	one := handOffVersion(bi("v0.3.0", "go1.26.8", "vcs.revision", rev1, "vcs.time", "2026-11-26T01:16:00Z", "vcs.modified", "false"), tree)
	assert.Equal(t, "v0.3.0 "+rev1+" sdk "+creative.Version+", commands "+tree, one)
	assert.Equal(t, one, handOffVersion(bi("v0.3.0", "go1.26.9", "vcs.revision", rev1, "vcs.modified", "false"), tree), "another Go, one commit")
	assert.NotEqual(t, one, handOffVersion(bi("v0.3.0", "go1.26.8", "vcs.revision", rev2, "vcs.modified", "false"), tree), "another commit")
	assert.NotEqual(t, one, handOffVersion(bi("v0.3.1", "go1.26.8", "vcs.revision", rev1), tree), "another release")
	assert.Equal(t, "v0.3.0 "+rev1+" modified sdk "+creative.Version+", commands "+tree, handOffVersion(bi("v0.3.0", "go1.26.8", "vcs.revision", rev1, "vcs.modified", "true"), tree))
	assert.Equal(t, "(devel) sdk "+creative.Version+", commands "+tree, handOffVersion(bi("(devel)", "go1.26.8"), tree), "a build that recorded no revision")
	assert.NotEqual(t, handOffVersion(bi("(devel)", "go1.26.8"), tree), handOffVersion(bi("(devel)", "go1.26.8"), "ba9876543210"), "two trees that recorded no revision")
	assert.Equal(t, "unknown sdk "+creative.Version+", commands "+tree, handOffVersion(nil, tree))
}

// TestTheCommandTreeDigestTellsTreesApartByOneFlag: two builds that
// recorded no revision agree only when their commands and flags do.
func TestTheCommandTreeDigestTellsTreesApartByOneFlag(t *testing.T) {
	tree := func(change func(root *cobra.Command)) string {
		a := &app{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
		a.con = &console{w: io.Discard}
		root := a.commands()
		if change != nil {
			change(root)
		}
		return treeDigest(root)
	}
	find := func(root *cobra.Command, path ...string) *cobra.Command {
		c, _, err := root.Find(path)
		require.NoError(t, err)
		return c
	}
	same := tree(nil)
	assert.Regexp(t, `^[0-9a-f]{12}$`, same)
	assert.Equal(t, same, tree(nil), "one tree, one digest, whatever order its flags were added in")
	assert.Equal(t, same, commandTree())
	devel := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	for name, change := range map[string]func(*cobra.Command){
		"a flag more": func(root *cobra.Command) {
			find(root, "image", "generate-qr").Flags().String("colour", "", "")
		},
		"a flag's default": func(root *cobra.Command) {
			find(root, "batch").Flags().Lookup("concurrency").DefValue = "8"
		},
		"a flag's type": func(root *cobra.Command) {
			c := find(root, "batch")
			fs := pflag.NewFlagSet("batch", pflag.ContinueOnError)
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "rate" {
					fs.Int("rate", 0, f.Usage)
				} else {
					fs.AddFlag(f)
				}
			})
			c.ResetFlags()
			c.Flags().AddFlagSet(fs)
		},
		"a command more": func(root *cobra.Command) {
			find(root, "image").AddCommand(&cobra.Command{Use: "paint"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			other := tree(change)
			assert.NotEqual(t, same, other)
			assert.NotEqual(t, handOffVersion(devel, same), handOffVersion(devel, other))
		})
	}
}

func TestCreativeCloudRefusesACreativeOfAnotherVersion(t *testing.T) {
	own := handOffVersion(buildInfo(), commandTree())
	code, stdout, stderr := runCLI(t, map[string]string{envCaller: "v0.1.0 3e30735a9c1d sdk 0.1.0"}, "--version")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "creative: creative and creative-cloud are of different versions (creative v0.1.0 3e30735a9c1d sdk 0.1.0; creative-cloud "+own+"): install both again with go install ./cmd/creative/...\n", stderr)

	code, stdout, stderr = runCLI(t, map[string]string{envCaller: own}, "--version")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, versionText(buildInfo()), stdout)

	// A build like this one but for its command line: its tree is another.
	build, _, _ := strings.Cut(own, ", commands ")
	code, stdout, stderr = runCLI(t, map[string]string{envCaller: build + ", commands 0123456789ab"}, "--version")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "creative: creative and creative-cloud were built from different sources: both are "+build+", but their commands and flags differ (digest 0123456789ab in creative, "+commandTree()+" in creative-cloud): install both again with go install ./cmd/creative/...\n", stderr)

	// creative itself has nothing to compare.
	code, _, stderr = runLight(t, map[string]string{envCaller: "v0.1.0"}, nil, "--version")
	assert.Equal(t, 0, code, stderr)
}

func TestCallerEnvReplacesAnEarlierValue(t *testing.T) {
	assert.Equal(t, []string{"HOME=/h", "PATH=/bin", envCaller + "=v1", envFound + "=/bin/creative-cloud, on PATH"},
		callerEnv([]string{"HOME=/h", envCaller + "=stale", envFound + "=stale", "PATH=/bin"}, "v1", "/bin/creative-cloud, on PATH"))
}

// TestACommandHandedBackIsRefusedNotHandedOnAgain: a program without
// bucket drivers that was handed a command as creative-cloud is creative
// (a copy or a link): it refuses the command instead of handing it on to
// itself for ever.
func TestACommandHandedBackIsRefusedNotHandedOnAgain(t *testing.T) {
	srv, env := fakeEnv(t)
	jobs := writeJobs(t, 2)
	env[envCaller] = handOffVersion(buildInfo(), commandTree())
	for _, tt := range []struct{ found, want string }{
		{"/opt/bin/creative-cloud, on PATH", "creative: the program found as creative-cloud (/opt/bin/creative-cloud, on PATH) handed the command back to creative, so it is not creative-cloud (a copy of creative, or a link to it?): install both again with go install ./cmd/creative/..., or unset CREATIVE_CLOUD_CALLER if it was set by hand\n"},
		{"", "creative: the program found as creative-cloud handed the command back to creative, so it is not creative-cloud (a copy of creative, or a link to it?): install both again with go install ./cmd/creative/..., or unset CREATIVE_CLOUD_CALLER if it was set by hand\n"},
	} {
		env[envFound] = tt.found
		handed := 0
		code, stdout, stderr := runLight(t, env, func() error { handed++; return &exitStatus{0} }, "batch", jobs, "--out", "mem://x")
		assert.Equal(t, exitUsage, code)
		assert.Equal(t, 0, handed, "not handed on")
		assert.Empty(t, stdout)
		assert.Equal(t, tt.want, stderr)
	}
	assert.Empty(t, srv.Requests(), "nothing sent")
	entries, err := os.ReadDir(filepath.Dir(jobs))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing created beside the jobs file")

	// A command that names no bucket runs as ever.
	code, _, stderr := runLight(t, env, nil, "--version")
	assert.Equal(t, 0, code, stderr)
}

// TestTheBuiltCreativeRunsNoCreativeCloudOfAnotherBuild runs the built
// creative with a program found as creative-cloud beside it or on PATH
// that is not the creative-cloud of its build: a script, a copy of
// creative, and copies of the real creative-cloud whose build information
// says another version or another module. Each is refused from what its
// file says, before it is run with the key: the command exits 2, and
// nothing is sent.
func TestTheBuiltCreativeRunsNoCreativeCloudOfAnotherBuild(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the script is a shell script")
	}
	bin := buildCLI(t)
	real, err := os.ReadFile(filepath.Join(filepath.Dir(bin), cloudProgram))
	require.NoError(t, err)
	self, err := os.ReadFile(bin)
	require.NoError(t, err)
	ran := filepath.Join(t.TempDir(), "ran")
	patched := func(old, new string) []byte {
		require.Len(t, new, len(old), "the build information keeps its length")
		require.Contains(t, string(real), old)
		return bytes.ReplaceAll(real, []byte(old), []byte(new))
	}
	const module = "github.com/creativegen/creative-go/cmd/creative"
	// The version go build stamped: (devel), or a pseudo-version from the
	// commit in a clean checkout; another of the same length is made by
	// changing its last byte.
	info, err := buildinfo.ReadFile(filepath.Join(filepath.Dir(bin), cloudProgram))
	require.NoError(t, err)
	version := info.Main.Version
	require.NotEmpty(t, version)
	other := version[:len(version)-1] + string(version[len(version)-1]^1)
	for _, tt := range []struct {
		name    string
		program []byte
		want    string
	}{
		{"a script", []byte("#!/bin/sh\necho \"$CREATIVE_ACCESS_KEY\" > '" + ran + "'\n"), "its build cannot be read"},
		{"a copy of creative", self, "it is the program " + module + " of module " + module + ", not " + module + "/creative-cloud"},
		{"another version", patched("cmd/creative\t"+version, "cmd/creative\t"+other), "it is of another build (" + other},
		{"another module", patched("dep\tgithub.com/spf13/cobra\tv", "dep\tgithub.com/spf13/cobrx\tv"), "it is built with module github.com/spf13/cobra missing"},
	} {
		for _, where := range []string{"beside creative", "on PATH"} {
			t.Run(tt.name+" "+where, func(t *testing.T) {
				_ = os.Remove(ran)
				dir, onPath := t.TempDir(), t.TempDir()
				creativeCopy := filepath.Join(dir, "creative")
				require.NoError(t, os.WriteFile(creativeCopy, self, 0o755))
				cloudDir := dir
				if where == "on PATH" {
					cloudDir = onPath
				}
				cloud := filepath.Join(cloudDir, cloudProgram)
				require.NoError(t, os.WriteFile(cloud, tt.program, 0o755))

				srv, _ := fakeEnv(t)
				jobs := writeJobs(t, 2)
				cmd := exec.Command(creativeCopy, "batch", jobs, "--out", "mem://out")
				cmd.Env = []string{"PATH=" + onPath, "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + srv.URL, "CREATIVE_ACCESS_KEY=" + srv.AccessKey}
				var stderr strings.Builder
				cmd.Stderr = &stderr
				err := cmd.Run()
				if _, ok := err.(*exec.ExitError); err != nil && !ok {
					t.Fatal(err)
				}
				assert.Equal(t, exitUsage, cmd.ProcessState.ExitCode(), stderr.String())
				assert.True(t, strings.HasPrefix(stderr.String(), "creative: "+cloud+" is not run: "), stderr.String())
				assert.Contains(t, stderr.String(), tt.want)
				assert.Contains(t, stderr.String(), "install both again with go install ./cmd/creative/...")
				assert.NoFileExists(t, ran, "the program was not run")
				assert.Empty(t, srv.Requests(), "nothing sent")
			})
		}
	}
}

func TestFindCloudLooksInTheEnvironmentBesideCreativeThenOnPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a program on PATH is a .exe there")
	}
	p, from, err := findCloud(func(k string) string { return map[string]string{envCloud: "/opt/creative-cloud"}[k] })
	require.NoError(t, err)
	assert.Equal(t, "/opt/creative-cloud", p)
	assert.Equal(t, "named by $CREATIVE_CLOUD", from)

	// The test binary has no creative-cloud beside it.
	t.Setenv("PATH", t.TempDir())
	_, _, err = findCloud(func(string) string { return "" })
	assert.Equal(t, cmdutil.ErrNoCloud, err)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, cloudProgram), []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", dir)
	p, from, err = findCloud(func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, cloudProgram), p)
	assert.Equal(t, "on PATH", from)
}

func TestFindCloudRefusesAProgramRelativeToTheCurrentFolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a program on PATH is a .exe there")
	}
	for _, p := range []string{"creative-cloud", "./creative-cloud", "bin/creative-cloud"} {
		_, _, err := findCloud(func(k string) string { return map[string]string{envCloud: p}[k] })
		assert.Equal(t, cmdutil.Usagef("$CREATIVE_CLOUD must be an absolute path, and is %q: a relative one would run whatever program of that name the current folder holds", p), err)
	}

	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("bin", 0o755))
	for _, p := range []string{cloudProgram, filepath.Join("bin", cloudProgram)} {
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	}
	for path, found := range map[string]string{".": cloudProgram, "bin": filepath.Join("bin", cloudProgram)} {
		t.Setenv("PATH", path)
		_, _, err := findCloud(func(string) string { return "" })
		assert.Equal(t, cmdutil.Usagef("the creative-cloud found on PATH is %q, relative to the current folder, and is not run: give its absolute path in $CREATIVE_CLOUD, or take relative folders out of PATH", found), err, "PATH=%s", path)
	}
}

// TestTheBuiltCreativeRunsNoCreativeCloudFromTheCurrentFolder: a
// creative-cloud named relative to the current folder, by $CREATIVE_CLOUD
// or a PATH entry, is not run (it would be given the access key): the
// command exits 2 with nothing sent.
func TestTheBuiltCreativeRunsNoCreativeCloudFromTheCurrentFolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the programs are .exe files there")
	}
	bin := buildCLI(t)
	lone := filepath.Join(t.TempDir(), "creative") // no creative-cloud beside it
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lone, data, 0o755))
	here := t.TempDir()
	ran := filepath.Join(here, "ran")
	require.NoError(t, os.WriteFile(filepath.Join(here, cloudProgram), []byte("#!/bin/sh\necho \"$CREATIVE_ACCESS_KEY\" > '"+ran+"'\n"), 0o755))

	srv, _ := fakeEnv(t)
	jobs := writeJobs(t, 2)
	for name, tt := range map[string]struct{ env, want string }{
		"$CREATIVE_CLOUD": {envCloud + "=" + cloudProgram, `creative: $CREATIVE_CLOUD must be an absolute path, and is "creative-cloud": a relative one would run whatever program of that name the current folder holds` + "\n"},
		"PATH":            {"PATH=.", `creative: the creative-cloud found on PATH is "creative-cloud", relative to the current folder, and is not run: give its absolute path in $CREATIVE_CLOUD, or take relative folders out of PATH` + "\n"},
	} {
		t.Run(name, func(t *testing.T) {
			_ = os.Remove(ran)
			cmd := exec.Command(lone, "batch", jobs, "--out", "mem://out")
			cmd.Dir = here
			cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + srv.URL, "CREATIVE_ACCESS_KEY=" + srv.AccessKey, tt.env}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			if _, ok := err.(*exec.ExitError); err != nil && !ok {
				t.Fatal(err)
			}
			assert.Equal(t, exitUsage, cmd.ProcessState.ExitCode())
			assert.Equal(t, tt.want, stderr.String())
			assert.NoFileExists(t, ran, "the program in the current folder was not run")
			assert.Empty(t, srv.Requests(), "nothing sent")
		})
	}
}

// TestTheInstalledPairHandsBucketURLsOver runs the built creative on a
// bucket URL (mem://, which lives in the one process that runs the
// command): it is refused, with nothing sent, when no creative-cloud is
// found, and runs in the creative-cloud found through $CREATIVE_CLOUD,
// beside creative (through a symbolic link to it) or on PATH.
func TestTheInstalledPairHandsBucketURLsOver(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the programs are .exe files there")
	}
	bin := buildCLI(t)
	cloud := filepath.Join(filepath.Dir(bin), cloudProgram)
	lone := filepath.Join(t.TempDir(), "creative") // no creative-cloud beside it
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(lone, data, 0o755))
	link := filepath.Join(t.TempDir(), "creative")
	require.NoError(t, os.Symlink(bin, link))
	noPath := "PATH=" + t.TempDir()

	srv, _ := fakeEnv(t)
	watchPrompts(srv)
	jobs := writeJobs(t, 2)
	run := func(bin string, env ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, "batch", jobs, "--out", "mem://out", "--ledger", t.TempDir())
		cmd.Env = append([]string{"HOME=" + t.TempDir(), "CREATIVE_BASE_URL=" + srv.URL, "CREATIVE_ACCESS_KEY=" + srv.AccessKey}, env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}

	code, stderr := run(lone, noPath)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "creative: bucket URLs need creative-cloud beside creative or on PATH: go install ./cmd/creative/... (from a clone) installs both\n", stderr)
	assert.Empty(t, srv.Requests(), "nothing sent")
	entries, err := os.ReadDir(filepath.Dir(jobs))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing created beside the jobs file")

	for name, env := range map[string][]string{
		"$CREATIVE_CLOUD":                     {noPath, envCloud + "=" + cloud},
		"beside creative, through a link":     {noPath},
		"on PATH":                             {"PATH=" + filepath.Dir(cloud)},
		"beside creative, as installed":       {noPath},
		"$CREATIVE_CLOUD, a file that is not": {noPath, envCloud + "=" + cloud + ".missing"},
	} {
		t.Run(name, func(t *testing.T) {
			program := lone
			switch name {
			case "beside creative, through a link":
				program = link
			case "beside creative, as installed":
				program = bin
			}
			code, stderr := run(program, env...)
			if strings.HasSuffix(name, "not") {
				assert.Equal(t, exitUsage, code)
				assert.Contains(t, stderr, "creative: "+cloud+".missing is not run: its build cannot be read")
				assert.Contains(t, stderr, "no such file or directory")
				return
			}
			require.Equal(t, 0, code, stderr)
			assert.Regexp(t, `creative: batch: 2 done in [0-9.]+s; results in mem://out/results/`, stderr)
		})
	}

	// creative-cloud run by a creative of another version.
	cmd := exec.Command(cloud, "--version")
	cmd.Env = []string{noPath, envCaller + "=v0.1.0 sdk 0.1.0"}
	got, err := cmd.CombinedOutput()
	assert.Equal(t, exitUsage, cmd.ProcessState.ExitCode(), "%v", err)
	assert.Contains(t, string(got), "creative: creative and creative-cloud are of different versions (creative v0.1.0 sdk 0.1.0; creative-cloud ")
}

// cloudSDK matches the packages of the cloud SDKs and what they bring.
var cloudSDK = regexp.MustCompile(`^(gocloud\.dev|github\.com/aws/|cloud\.google\.com/|github\.com/Azure/|github\.com/AzureAD/|google\.golang\.org/(grpc|api|genproto)|go\.opentelemetry\.io/|github\.com/creativegen/creative-go/cmd/creative/internal/bucket$)`)

// TestCreativeLinksNoCloudSDK: creative, which every command and every
// Tab of completion starts, links none of the cloud SDKs; creative-cloud
// links the driver of every bucket scheme.
func TestCreativeLinksNoCloudSDK(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		require.NoError(t, err, "go list -deps %s", pkg)
		return strings.Fields(string(out))
	}
	for _, p := range deps(mainPackage) {
		assert.False(t, cloudSDK.MatchString(p), "creative links %s", p)
	}
	cloud := deps(cloudPackage)
	for _, p := range []string{"gocloud.dev/blob/s3blob", "gocloud.dev/blob/gcsblob", "gocloud.dev/blob/azureblob", "gocloud.dev/blob/memblob"} {
		assert.Contains(t, cloud, p)
	}
}
