package discovery

import (
	"runtime"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/version"
)

// kubernetesVersion is the Kubernetes release whose API the server implements: the one of its
// k8s.io libraries. The "+sqlkube" build suffix is valid semver, which kubectl parses without
// a version skew warning.
const (
	kubernetesMajor   = "1"
	kubernetesMinor   = "37"
	kubernetesVersion = "v1.37.2+sqlkube"
)

// openAPIVersion is the info.version of kube-apiserver's OpenAPI v3 documents of built-ins:
// its emulation version ("1.37"), which its config completion sets.
const openAPIVersion = kubernetesMajor + "." + kubernetesMinor

// Version is what /version answers, as kube-apiserver's version.Info.
var Version = func() version.Info {
	info := version.Info{
		Major:                 kubernetesMajor,
		Minor:                 kubernetesMinor,
		EmulationMajor:        kubernetesMajor,
		EmulationMinor:        kubernetesMinor,
		MinCompatibilityMajor: kubernetesMajor,
		MinCompatibilityMinor: "36",
		GitVersion:            kubernetesVersion,
		GitTreeState:          "clean",
		BuildDate:             "1970-01-01T00:00:00Z", // kube-apiserver's value when unknown
		GoVersion:             runtime.Version(),
		Compiler:              runtime.Compiler,
		Platform:              runtime.GOOS + "/" + runtime.GOARCH,
	}
	if build, ok := debug.ReadBuildInfo(); ok {
		for _, setting := range build.Settings {
			switch setting.Key {
			case "vcs.revision":
				info.GitCommit = setting.Value
			case "vcs.time":
				info.BuildDate = setting.Value
			case "vcs.modified":
				if setting.Value == "true" {
					info.GitTreeState = "dirty"
				}
			}
		}
	}
	return info
}()
