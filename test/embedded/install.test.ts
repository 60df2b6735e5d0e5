import { describe, expect, it } from 'vitest';
import { cpuBuildPackage, ENGINE_FOLDER, installCommand, NODE_LLAMA_CPP_VERSION } from '../../src/embedded/engine.js';

describe('installing node-llama-cpp for the embedded backend', () => {
  it('names only the CPU build of llama.cpp for each platform', () => {
    expect(cpuBuildPackage('linux', 'x64')).toBe('@node-llama-cpp/linux-x64');
    expect(cpuBuildPackage('linux', 'arm64')).toBe('@node-llama-cpp/linux-arm64');
    expect(cpuBuildPackage('linux', 'arm')).toBe('@node-llama-cpp/linux-armv7l');
    expect(cpuBuildPackage('darwin', 'arm64')).toBe('@node-llama-cpp/mac-arm64-metal');
    expect(cpuBuildPackage('darwin', 'x64')).toBe('@node-llama-cpp/mac-x64');
    expect(cpuBuildPackage('win32', 'x64')).toBe('@node-llama-cpp/win-x64');
  });

  it('gives a command that installs the pinned release into the folder Conclave looks in, leaving the other builds out', () => {
    const command = installCommand('/opt/conclave');
    expect(command).toContain(`--prefix /opt/conclave/${ENGINE_FOLDER}`);
    expect(command).toContain('--omit=optional');
    expect(command).toContain('--ignore-scripts');
    expect(command).toContain(`node-llama-cpp@${NODE_LLAMA_CPP_VERSION}`);
    expect(command).toContain(`${cpuBuildPackage()}@${NODE_LLAMA_CPP_VERSION}`);
    expect(installCommand('/home/a b/conclave')).toContain('--prefix "/home/a b/conclave/embedded-engine"');
  });
});
