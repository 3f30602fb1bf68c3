package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
)

func TestVersionTextNamesTheModuleAndTheRevision(t *testing.T) {
	goLine := "go        " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	settings := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tt := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"an install at a version, from a clean commit", &debug.BuildInfo{
			Main:     debug.Module{Path: "github.com/creativegen/creative-go/cmd/creative", Version: "v0.3.0"},
			Deps:     []*debug.Module{{Path: sdkModule, Version: "v0.3.0"}},
			Settings: settings("vcs", "git", "vcs.revision", "3e30735a9c1d4e0f8b2a6c7d5e4f3a2b1c0d9e8f", "vcs.time", "2026-11-26T01:16:00Z", "vcs.modified", "false"),
		}, "creative  v0.3.0\nrevision  3e30735a9c1d4e0f8b2a6c7d5e4f3a2b1c0d9e8f\ncommitted 2026-11-26T01:16:00Z\nsdk       " + creative.Version + " (module v0.3.0)\n" + goLine},
		{"a build from a clone with changes, the SDK replaced", &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261126011600-3e30735a9c1d+dirty"},
			Deps:     []*debug.Module{{Path: sdkModule, Version: "v0.0.0", Replace: &debug.Module{Path: "../.."}}},
			Settings: settings("vcs.revision", "3e30735a9c1d4e0f8b2a6c7d5e4f3a2b1c0d9e8f", "vcs.time", "2026-11-26T01:16:00Z", "vcs.modified", "true"),
		}, "creative  v0.0.0-20261126011600-3e30735a9c1d+dirty\nrevision  3e30735a9c1d4e0f8b2a6c7d5e4f3a2b1c0d9e8f, with changes not committed\ncommitted 2026-11-26T01:16:00Z\nsdk       " + creative.Version + " (module v0.0.0, replaced by ../..)\n" + goLine},
		{"a build that recorded no revision", &debug.BuildInfo{
			Main: debug.Module{Version: "(devel)"},
			Deps: []*debug.Module{{Path: sdkModule, Version: "(devel)"}},
		}, "creative  (devel)\nrevision  not recorded (a build outside a git checkout, in a git worktree, or with -buildvcs=false records none)\nsdk       " + creative.Version + "\n" + goLine},
		{"no build information at all", nil,
			"creative  unknown\nrevision  not recorded (a build outside a git checkout, in a git worktree, or with -buildvcs=false records none)\nsdk       " + creative.Version + "\n" + goLine},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionText(tt.bi))
		})
	}
}

func TestVersionFlagAndCommandPrintTheBuildInformation(t *testing.T) {
	// A test binary holds build information without any vcs setting (go
	// test records none), so this shows the text of such a build; the
	// test below builds the command as a user does.
	code, stdout, stderr := runCLI(t, nil, "--version")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, versionText(buildInfo()), stdout)
	assert.True(t, strings.HasPrefix(stdout, "creative  (devel)\nrevision  not recorded"), stdout)
	assert.Empty(t, stderr)

	code, fromCommand, _ := runCLI(t, nil, "version")
	require.Equal(t, 0, code)
	assert.Equal(t, stdout, fromCommand, "creative version says the same")
}

func TestTheBuiltCommandReportsWhatTheToolchainRecorded(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "creative")
	build := exec.Command(goTool, "build", "-o", bin, mainPackage)
	// As a user's go build does: stamp the revision when the checkout
	// allows (a clone does; a git worktree does not, see go.dev/issue/58218).
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	recorded, err := exec.Command(goTool, "version", "-m", bin).Output()
	require.NoError(t, err)
	got, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	version := string(got)
	mainVersion, rev, modified := "", "", ""
	for _, line := range strings.Split(string(recorded), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			mainVersion = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.modified="):
			modified = strings.TrimPrefix(f[1], "vcs.modified=")
		}
	}
	require.NotEmpty(t, mainVersion, "go version -m names the main module:\n%s", recorded)
	assert.True(t, strings.HasPrefix(version, "creative  "+mainVersion+"\n"), "%s\nrecorded:\n%s", version, recorded)
	switch {
	case rev == "":
		t.Log("this checkout records no revision; the line says so")
		assert.Contains(t, version, "\nrevision  not recorded (")
	case modified == "true":
		assert.Contains(t, version, "\nrevision  "+rev+", with changes not committed\n")
	default:
		assert.Contains(t, version, "\nrevision  "+rev+"\n")
	}
}
