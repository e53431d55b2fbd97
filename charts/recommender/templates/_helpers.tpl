{{/* The chart's name, or nameOverride. */}}
{{- define "recommender.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{/*
The release's full name, at most 52 characters: a CronJob's name is (its
Jobs add 11). fullnameOverride wins; a release named after the chart is
not repeated.
*/}}
{{- define "recommender.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "recommender.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "recommender.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "recommender.selectorLabels" -}}
app.kubernetes.io/name: {{ include "recommender.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "recommender.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "recommender.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "recommender.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
The secrets a run reads: for each, the volume's name, the file's directory
and the RECOMMENDER_* variable that names the file.
*/}}
{{- define "recommender.secretFiles" -}}
githubToken: {volume: github-token, dir: /var/run/secrets/recommender/github-token, env: RECOMMENDER_GITHUB_TOKEN_FILE}
githubAppKey: {volume: github-app-key, dir: /var/run/secrets/recommender/github-app-key, env: RECOMMENDER_GITHUB_APP_KEY_FILE}
gitlabToken: {volume: gitlab-token, dir: /var/run/secrets/recommender/gitlab-token, env: RECOMMENDER_GITLAB_TOKEN_FILE}
prometheusToken: {volume: prometheus-token, dir: /var/run/secrets/recommender/prometheus-token, env: RECOMMENDER_PROMETHEUS_TOKEN_FILE}
prometheusPassword: {volume: prometheus-password, dir: /var/run/secrets/recommender/prometheus-password, env: RECOMMENDER_PROMETHEUS_PASSWORD_FILE}
signingKey: {volume: signing-key, dir: /var/run/secrets/recommender/signing-key, env: RECOMMENDER_SIGNING_KEY_FILE}
kubeconfig: {volume: kubeconfig, dir: /var/run/secrets/recommender/kubeconfig, env: RECOMMENDER_KUBECONFIG}
{{- end -}}

{{/*
GOMEMLIMIT, Go's soft memory limit, from the container's memory limit:
what is left beside the Helm render child (its 128 MiB, which the kernel
holds it to) and 64 MiB for what Go does not count (the program's code,
the page cache). A run's bounds on what it reads follow it
(docs/security.md). Empty without a memory limit. internal/deploy checks
the sum against the tool's own constants.
*/}}
{{- define "recommender.gomemlimit" -}}
{{- $mem := toString (dig "limits" "memory" "" (.Values.resources | default dict)) -}}
{{- if $mem -}}
{{- $num := regexFind "^[0-9]+([.][0-9]+)?" $mem -}}
{{- $unit := trimPrefix $num $mem -}}
{{- $units := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 -}}
{{- if or (not $num) (not (hasKey $units $unit)) -}}
{{- fail (printf "resources.limits.memory %q: write it as bytes, or with Ki, Mi, Gi, Ti, k, M, G or T, so that the chart can set GOMEMLIMIT from it" $mem) -}}
{{- end -}}
{{- $mib := floor (divf (mulf (float64 $num) (get $units $unit)) 1048576.0) | int64 -}}
{{- $left := sub $mib 192 -}}
{{- if lt $left 128 -}}
{{- fail (printf "resources.limits.memory %s is too small: a run needs 320Mi at least (the Helm renderer's 128 MiB, 64 MiB of headroom, 128 MiB for the run)" $mem) -}}
{{- end -}}
{{- printf "%dMiB" $left -}}
{{- end -}}
{{- end -}}

{{/*
checkSchedule refuses a schedule the API server would refuse, saying
which field is wrong: the schema checks its shape (five fields or a
macro), this each field's syntax. Ranges of values (minute 0-59) are the
API server's to check.
*/}}
{{- define "recommender.checkSchedule" -}}
{{- $s := trim .Values.schedule -}}
{{- if not (hasPrefix "@" $s) -}}
{{- $names := list "minute" "hour" "day of month" "month" "day of week" -}}
{{- $item := "(\\*|\\?|[0-9]+(-[0-9]+)?|[A-Za-z]{3}(-[A-Za-z]{3})?)(/[0-9]+)?" -}}
{{- $field := printf "^%s(,%s)*$" $item $item -}}
{{- range $i, $f := regexSplit "\\s+" $s -1 -}}
{{- if not (regexMatch $field $f) -}}
{{- fail (printf "schedule %q: the %s field %q is not cron syntax: write a number, a range (1-5), a step (*/15), a list (0,30) or a name (MON, JAN)" $s (index $names $i) $f) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
