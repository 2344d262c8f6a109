// An OVA's descriptor (OVF 1.0) and manifest for one stream-optimized VMDK: a VM with a
// SCSI disk and a VMXNET3 NIC on "VM Network", whose `talos.config` property vSphere
// asks for at deploy and hands the guest through guestinfo (the com.vmware.guestInfo
// transport), the property the VMware platform reads as Talos's OVA offers it.

export const ovaFiles = { ovf: "disk.ovf", manifest: "disk.mf", disk: "disk.vmdk" } as const;

export interface OvfDisk {
  /** The VMDK file's size in bytes. */
  fileBytes: number;
  /** The disk's virtual size in MiB. */
  capacityMiB: number;
}

const xmlEscape = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function item(fields: Record<string, string | number>, extra: string[] = []): string {
  const body = Object.entries(fields).map(([k, v]) => `        <rasd:${k}>${xmlEscape(String(v))}</rasd:${k}>`);
  return ["      <Item>", ...body, ...extra, "      </Item>"].join("\n");
}

/** The OVF descriptor of a VM with 2 vCPUs, 2 GiB and this disk. */
export function renderOvf(disk: OvfDisk, name = "basalt"): string {
  const hardware = [
    item({
      ElementName: "2 virtual CPUs",
      InstanceID: 1,
      ResourceType: 3,
      VirtualQuantity: 2,
      AllocationUnits: "hertz * 10^6",
    }),
    item({
      ElementName: "2048 MB of memory",
      InstanceID: 2,
      ResourceType: 4,
      VirtualQuantity: 2048,
      AllocationUnits: "byte * 2^20",
    }),
    // VMware's paravirtual SCSI, as Talos's OVF asks: the image has its driver (vmw_pvscsi), not LSI Logic's.
    item({
      Address: 0,
      ElementName: "scsiController0",
      InstanceID: 3,
      ResourceSubType: "VirtualSCSI",
      ResourceType: 6,
    }),
    item({
      AddressOnParent: 0,
      ElementName: "disk0",
      HostResource: "ovf:/disk/vmdisk1",
      InstanceID: 4,
      Parent: 3,
      ResourceType: 17,
    }),
    item({
      AddressOnParent: 1,
      AutomaticAllocation: "true",
      Connection: "VM Network",
      ElementName: "ethernet0",
      InstanceID: 5,
      ResourceSubType: "VmxNet3",
      ResourceType: 10,
    }),
  ];
  return `<?xml version="1.0" encoding="UTF-8"?>
<Envelope xmlns="http://schemas.dmtf.org/ovf/envelope/1" xmlns:ovf="http://schemas.dmtf.org/ovf/envelope/1" xmlns:rasd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_ResourceAllocationSettingData" xmlns:vssd="http://schemas.dmtf.org/wbem/wscim/1/cim-schema/2/CIM_VirtualSystemSettingData" xmlns:vmw="http://www.vmware.com/schema/ovf">
  <References>
    <File ovf:id="file1" ovf:href="${ovaFiles.disk}" ovf:size="${disk.fileBytes}"/>
  </References>
  <DiskSection>
    <Info>Virtual disks</Info>
    <Disk ovf:diskId="vmdisk1" ovf:fileRef="file1" ovf:capacity="${disk.capacityMiB}" ovf:capacityAllocationUnits="byte * 2^20" ovf:format="http://www.vmware.com/interfaces/specifications/vmdk.html#streamOptimized"/>
  </DiskSection>
  <NetworkSection>
    <Info>Logical networks</Info>
    <Network ovf:name="VM Network">
      <Description>The network the VM is attached to</Description>
    </Network>
  </NetworkSection>
  <VirtualSystem ovf:id="${xmlEscape(name)}">
    <Info>A Basalt node</Info>
    <Name>${xmlEscape(name)}</Name>
    <ProductSection ovf:required="false">
      <Info>Machine configuration</Info>
      <Property ovf:key="talos.config" ovf:type="string" ovf:userConfigurable="true" ovf:value="">
        <Label>Machine configuration</Label>
        <Description>The machine configuration, inline or base64-encoded</Description>
      </Property>
    </ProductSection>
    <OperatingSystemSection ovf:id="101" vmw:osType="other5xLinux64Guest">
      <Info>Guest operating system</Info>
    </OperatingSystemSection>
    <VirtualHardwareSection ovf:transport="com.vmware.guestInfo">
      <Info>Virtual hardware</Info>
      <System>
        <vssd:ElementName>Virtual Hardware Family</vssd:ElementName>
        <vssd:InstanceID>0</vssd:InstanceID>
        <vssd:VirtualSystemIdentifier>${xmlEscape(name)}</vssd:VirtualSystemIdentifier>
        <vssd:VirtualSystemType>vmx-15</vssd:VirtualSystemType>
      </System>
${hardware.join("\n")}
    </VirtualHardwareSection>
  </VirtualSystem>
</Envelope>
`;
}

/** The OVA manifest: each file's SHA-256, as vSphere checks it on import. */
export function renderManifest(sha256: Readonly<Record<string, string>>): string {
  return Object.entries(sha256)
    .map(([file, sum]) => `SHA256(${file})= ${sum}\n`)
    .join("");
}
