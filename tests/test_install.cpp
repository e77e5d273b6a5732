// `cmake --install` of this build into a fresh prefix gives programs that start from there: the
// engine, the codec and the GUI answer --version (the GUI finds Qwt, built outside the system's
// folders, through its install RPATH), and the HDF5 filter plugin and shipped geometries are in
// place.
#include <QtTest>

#include <QProcess>
#include <QTemporaryDir>

class TestInstall : public QObject {
  Q_OBJECT

  static QString run(
      const QString& program, const QStringList& arguments, int* code,
      const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment()) {
    QProcess process;
    process.setProcessEnvironment(environment);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(program, arguments);
    if (!process.waitForFinished(600'000)) {  // a hang guard only
      *code = -1;
      return QStringLiteral("did not finish: ") + process.errorString();
    }
    *code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -2;
    return QString::fromUtf8(process.readAll());
  }

 private slots:
  void theInstalledProgramsStart() {
    const QString cmake = qEnvironmentVariable("LIVEDRP_CMAKE_COMMAND");
    const QString build = qEnvironmentVariable("LIVEDRP_BUILD_DIR");
    if (cmake.isEmpty() || build.isEmpty())
      QSKIP("run through CTest (it names cmake and the build)");
    QTemporaryDir prefix;
    QVERIFY(prefix.isValid());
    int code = 0;
    QString output =
        run(cmake, {QStringLiteral("--install"), build, QStringLiteral("--prefix"), prefix.path()},
            &code);
    QVERIFY2(code == 0, qPrintable(output));

    // Without the build tree's environment: nothing points at the build folder.
    QProcessEnvironment clean = QProcessEnvironment::systemEnvironment();
    clean.remove(QStringLiteral("LD_LIBRARY_PATH"));
    clean.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    output = run(prefix.filePath(QStringLiteral("bin/livedrp-engine")),
                 {QStringLiteral("--version")}, &code, clean);
    QVERIFY2(code == 0 && output.startsWith(QStringLiteral("livedrp-engine ")), qPrintable(output));
    output = run(prefix.filePath(QStringLiteral("bin/livedrp-codec")),
                 {QStringLiteral("--version")}, &code, clean);
    QVERIFY2(code == 0 && output.contains(QStringLiteral("livedrp-codec")), qPrintable(output));
    const QString gui = prefix.filePath(QStringLiteral("bin/livedrp"));
    if (QFileInfo::exists(gui)) {  // built with LIVEDRP_GUI
      output = run(gui, {QStringLiteral("--version")}, &code, clean);
      QVERIFY2(code == 0 && output.contains(QStringLiteral("livedrp")), qPrintable(output));
    }
    QVERIFY(QFileInfo::exists(
        prefix.filePath(QStringLiteral("lib/hdf5/plugins/liblivedrp_h5filter.so"))));
    QVERIFY(QFileInfo::exists(prefix.filePath(QStringLiteral("share/livedrp/geometry"))));
  }
};

QTEST_GUILESS_MAIN(TestInstall)
#include "test_install.moc"
