package release

import (
	"fmt"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// ChartVersion is the chart's version for a release version: the version
// itself without its v when it is semantic (v1.2.3 → 1.2.3), else a
// pre-release of 0.0.0 that names it (a checkout without tags describes
// itself by its commit: 6f5cf78-dirty → 0.0.0-6f5cf78-dirty), since Helm
// takes only semantic versions.
func ChartVersion(version string) (string, error) {
	v := strings.TrimPrefix(version, "v")
	if _, err := semver.StrictNewVersion(v); err == nil {
		return v, nil
	}
	pre := "0.0.0-" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, v)
	if _, err := semver.StrictNewVersion(pre); err != nil {
		return "", fmt.Errorf("chart version of %q: %w", version, err)
	}
	return pre, nil
}

// PackageChart packages the chart in dir into outDir as `helm package`
// does, with the release's version as its appVersion (the image tag it
// defaults to) and ChartVersion as its version; modified dates every file
// in the archive, so that packaging again gives the same bytes. It
// returns the archive's path.
func PackageChart(dir, outDir, version string, modified time.Time) (string, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	cv, err := ChartVersion(version)
	if err != nil {
		return "", err
	}
	ch.Metadata.Version = cv
	ch.Metadata.AppVersion = version
	ch.StampModTimes(modified)
	if err := ch.Validate(); err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	}
	return chartutil.Save(ch, outDir)
}
