{{- define "gpuslice.labels" -}}
app.kubernetes.io/name: gpuslice
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "gpuslice.hostPath" -}}
- name: {{ .name }}
  hostPath:
    path: {{ .path }}
    type: {{ .type | default "DirectoryOrCreate" }}
{{- end -}}
