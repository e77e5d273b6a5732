#pragma once
// Running one of livedrp's command-line tools from a test: exit status and output, with a time
// limit, and the check every bad-input case makes (exit status 2, the problem named on stderr).
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

struct CliResult {
  int exit_code = -1;  // -1: crashed or timed out
  QString out, err;
};

// The tool an environment variable CTest sets names (LIVEDRP_ENGINE_EXE, LIVEDRP_CODEC_EXE). Where
// that path does not exist (the tests were packed for the GPU machine, ../shared/gpu/pack, with the
// tools beside them), the tool of the same name beside the test executable.
inline QString cli_executable(const char* executable_variable) {
  const QString named = qEnvironmentVariable(executable_variable);
  if (named.isEmpty() || QFileInfo::exists(named)) return named;
  const QString beside = QCoreApplication::applicationDirPath() + "/" + QFileInfo(named).fileName();
  return QFileInfo::exists(beside) ? beside : named;
}

inline CliResult run_cli(const char* executable_variable, const QStringList& arguments,
                         int timeout_ms = 120000) {
  QProcess process;
  process.start(cli_executable(executable_variable), arguments);
  CliResult result;
  if (!process.waitForFinished(timeout_ms)) {
    process.kill();
    process.waitForFinished();
    result.err = "timed out";
    return result;
  }
  result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  result.out = QString::fromUtf8(process.readAllStandardOutput());
  result.err = QString::fromUtf8(process.readAllStandardError());
  return result;
}

// Use as: expect_bad_input(run_cli(...), "text"); returns early from the test on failure.
#define EXPECT_BAD_INPUT(result, expected_text)                                         \
  do {                                                                                  \
    const CliResult r_ = (result);                                                      \
    QVERIFY2(r_.exit_code == 2,                                                         \
             qPrintable(QString("exit %1, stderr: %2").arg(r_.exit_code).arg(r_.err))); \
    QVERIFY2(r_.err.contains(expected_text),                                            \
             qPrintable(QString("stderr lacks '%1': %2").arg(expected_text, r_.err)));  \
  } while (false)

// Reads `process`'s standard error (its read channel) until the engine announces its control
// socket ("control socket on ENDPOINT"), the process ends or 60 s pass. Returns the endpoint,
// empty when none was announced; everything read is appended to `err`.
inline QString await_control_endpoint(QProcess& process, QString& err) {
  const QRegularExpression announced("control socket on (\\S+)");
  QRegularExpressionMatch match;
  for (QDeadlineTimer deadline(60000); !(match = announced.match(err)).hasMatch() &&
                                       !deadline.hasExpired() &&
                                       process.state() != QProcess::NotRunning;) {
    process.waitForReadyRead(200);
    err += QString::fromUtf8(process.readAllStandardError());
  }
  return match.hasMatch() ? match.captured(1) : QString();
}
