; Skiff's Windows installer (NSIS 3, Unicode). `make package-windows` builds
; it with makensis from the files it staged in dist/windows:
;   makensis -DVERSION=0.1.0 -DFILEVERSION=0.1.0.1 -DSRC=dist/windows
;            -DOUT=dist/skiff-0.1.0-windows-amd64-setup.exe skiff.nsi
; It installs skiff.exe (the command line and the service, a console
; program), skiff-window.exe (the window), skiff-tray.exe (the tray, which
; the Start menu, the import links and the login start) and beside them
; wintun.dll (the
; official wintun 0.14.1 amd64 build, which the service loads from its own
; folder only) with Wintun's licence, wintun-LICENSE.txt, into Program
; Files, registers and starts the service (`skiff service install`), adds
; the Start-menu entry, starts the tray at the installing user's login
; (HKCU Run, the value Settings' "Start Skiff at login" turns on and off:
; app/autostart), and an uninstaller that stops and removes the service,
; restores the routes (`skiff cleanup`) and removes that Run value while it
; is still the installer's. The users' own data (%APPDATA%\skiff) is left
; alone.

; A 64-bit installer (NSIS's amd64-unicode stub, which Debian's nsis
; ships) for a 64-bit program: it also runs under wine64, which cannot run
; 32-bit programs, so test/winsmoke installs and uninstalls it there.
Target amd64-unicode
SetCompressor /SOLID lzma
RequestExecutionLevel admin
ManifestDPIAware true

!include "MUI2.nsh"
!include "x64.nsh"
!include "LogicLib.nsh"

!ifndef VERSION
  !error "VERSION is not defined (-DVERSION=0.1.0)"
!endif
!ifndef FILEVERSION
  !error "FILEVERSION is not defined (-DFILEVERSION=0.1.0.1)"
!endif
!ifndef SRC
  !error "SRC is not defined (-DSRC=dist/windows)"
!endif
!ifndef OUT
  !define OUT "skiff-${VERSION}-windows-amd64-setup.exe"
!endif

!define UNINSTKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\Skiff"
; The login item (app/autostart's RunKey and RunValue).
!define RUNKEY "Software\Microsoft\Windows\CurrentVersion\Run"
!define RUNVALUE "Skiff"

Name "Skiff ${VERSION}"
OutFile "${OUT}"
InstallDir "$PROGRAMFILES64\Skiff"
InstallDirRegKey HKLM "${UNINSTKEY}" "InstallLocation"
BrandingText "Skiff ${VERSION}"

VIProductVersion "${FILEVERSION}"
VIAddVersionKey "ProductName" "Skiff"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "Skiff installer"
VIAddVersionKey "CompanyName" "Skiff"
VIAddVersionKey "LegalCopyright" "The Skiff Authors, MIT licence"

!define MUI_ICON "${SRC}\skiff.ico"
!define MUI_UNICON "${SRC}\skiff.ico"
!define MUI_ABORTWARNING
!define MUI_FINISHPAGE_RUN "$INSTDIR\skiff-tray.exe"
!define MUI_FINISHPAGE_RUN_PARAMETERS "--open"
!define MUI_FINISHPAGE_RUN_TEXT "Open Skiff"

!insertmacro MUI_PAGE_LICENSE "${SRC}\LICENSE.txt"
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_PAGE_FINISH
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

; URL handlers: clash://, clashmeta:// and sing-box:// import links open
; skiff-tray, which hands them to the window; it asks before it adds the
; subscription (app/deeplink).
!macro RegisterScheme SCHEME
  WriteRegStr HKLM "Software\Classes\${SCHEME}" "" "URL:${SCHEME} import link (Skiff)"
  WriteRegStr HKLM "Software\Classes\${SCHEME}" "URL Protocol" ""
  WriteRegStr HKLM "Software\Classes\${SCHEME}\DefaultIcon" "" "$INSTDIR\skiff.ico"
  WriteRegStr HKLM "Software\Classes\${SCHEME}\shell\open\command" "" '"$INSTDIR\skiff-tray.exe" --open "%1"'
!macroend

; Removes a scheme's handler only while it is still Skiff's.
!macro UnregisterScheme SCHEME
  ReadRegStr $0 HKLM "Software\Classes\${SCHEME}\shell\open\command" ""
  ${If} $0 == '"$INSTDIR\skiff-tray.exe" --open "%1"'
    DeleteRegKey HKLM "Software\Classes\${SCHEME}"
  ${EndIf}
!macroend

Function .onInit
  ${IfNot} ${RunningX64}
    MessageBox MB_ICONSTOP "Skiff needs 64-bit Windows." /SD IDOK
    Abort
  ${EndIf}
  SetRegView 64
FunctionEnd

Function un.onInit
  SetRegView 64
FunctionEnd

Section "Skiff" SecMain
  SectionIn RO
  SetOutPath "$INSTDIR"

  ; An upgrade: stop and remove the old service first, so its files can be
  ; replaced.
  ${If} ${FileExists} "$INSTDIR\skiff.exe"
    DetailPrint "Stopping the running Skiff service"
    nsExec::ExecToLog '"$INSTDIR\skiff.exe" service uninstall'
    Pop $0
  ${EndIf}

  File "${SRC}\skiff.exe"
  File "${SRC}\skiff-window.exe"
  File "${SRC}\skiff-tray.exe"
  File "${SRC}\LICENSE.txt"
  File "${SRC}\skiff.ico"
  File "${SRC}\wintun.dll"
  File "${SRC}\wintun-LICENSE.txt"

  WriteUninstaller "$INSTDIR\uninstall.exe"
  CreateShortcut "$SMPROGRAMS\Skiff.lnk" "$INSTDIR\skiff-tray.exe" "--open" "$INSTDIR\skiff.ico"
  ; The tray at login, for the user who installs (the one who runs the
  ; elevated installer; others turn it on in Settings). Per user, so that
  ; Settings can turn it off without administrator rights.
  WriteRegStr HKCU "${RUNKEY}" "${RUNVALUE}" '"$INSTDIR\skiff-tray.exe"'

  WriteRegStr HKLM "${UNINSTKEY}" "DisplayName" "Skiff"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINSTKEY}" "Publisher" "Skiff"
  WriteRegStr HKLM "${UNINSTKEY}" "URLInfoAbout" "https://github.com/skiffvpn/skiff"
  WriteRegStr HKLM "${UNINSTKEY}" "DisplayIcon" "$INSTDIR\skiff.ico"
  WriteRegStr HKLM "${UNINSTKEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINSTKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINSTKEY}" "NoRepair" 1
  !insertmacro RegisterScheme "clash"
  !insertmacro RegisterScheme "clashmeta"
  !insertmacro RegisterScheme "sing-box"

  ; Register and start the privileged service (LocalSystem), so that TUN
  ; mode works from the window without a prompt, now and after a reboot.
  DetailPrint "Registering the Skiff service"
  nsExec::ExecToLog '"$INSTDIR\skiff.exe" service install'
  Pop $0
  ${If} $0 != 0
    DetailPrint "skiff service install failed ($0)"
    MessageBox MB_ICONEXCLAMATION "The Skiff service could not be registered (exit $0). The window's local proxy works; TUN mode needs the service. Run '$INSTDIR\skiff.exe service install' as administrator to retry." /SD IDOK
  ${EndIf}
SectionEnd

Section "Uninstall"
  ; Stop and remove the service, then restore routes and rules a TUN run
  ; may have left behind.
  DetailPrint "Stopping and removing the Skiff service"
  nsExec::ExecToLog '"$INSTDIR\skiff.exe" service uninstall'
  Pop $0
  DetailPrint "Restoring routes"
  nsExec::ExecToLog '"$INSTDIR\skiff.exe" cleanup'
  Pop $0

  Delete "$SMPROGRAMS\Skiff.lnk"
  Delete "$INSTDIR\skiff.exe"
  Delete "$INSTDIR\skiff-window.exe"
  Delete "$INSTDIR\skiff-tray.exe"
  Delete "$INSTDIR\wintun.dll"
  Delete "$INSTDIR\wintun-LICENSE.txt"
  Delete "$INSTDIR\skiff.ico"
  Delete "$INSTDIR\LICENSE.txt"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKLM "${UNINSTKEY}"
  ; The login item, only while it starts this installation's tray.
  ReadRegStr $0 HKCU "${RUNKEY}" "${RUNVALUE}"
  ${If} $0 == '"$INSTDIR\skiff-tray.exe"'
    DeleteRegValue HKCU "${RUNKEY}" "${RUNVALUE}"
  ${EndIf}
  !insertmacro UnregisterScheme "clash"
  !insertmacro UnregisterScheme "clashmeta"
  !insertmacro UnregisterScheme "sing-box"
SectionEnd
